package io.github.dlpack4j.model;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Device;
import io.github.dlpack4j.Tensor;

/**
 * A model's declared inputs and outputs, and the checks made against them: a call's inputs in Java,
 * before Python runs; a model call's outputs after it. An input is a tensor or text (a string a
 * row); an output is a tensor, text, or values (one JSON-like value a row).
 */
final class Signature {
    /** What a declared input or output carries. */
    enum Kind {
        /** A tensor, through DLPack. */
        TENSOR,
        /** A string a row: Java's {@code List<String>}, Python's {@code list[str]}. */
        TEXT,
        /** One JSON-like value a row: Python's list of them, Java's {@code List<Object>}. */
        VALUE
    }

    /**
     * A declared input or output.
     *
     * @param name its name
     * @param kind what it carries
     * @param spec its dtype and shape, for a tensor; null otherwise
     */
    record Port(String name, Kind kind, TensorSpec spec) {
        static Port tensor(TensorSpec spec) {
            return new Port(spec.name(), Kind.TENSOR, spec);
        }

        @Override
        public String toString() {
            return kind == Kind.TENSOR ? spec.toString() : name + " " + kind.name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /**
     * A call's text input: its rows, checked (not empty, no null, no lone surrogate).
     *
     * @param rows the strings, one a row
     */
    record Texts(List<String> rows) {
    }

    private final String model;
    /** The declared inputs in the model's order; empty when undeclared (a call's map then gives the order). */
    private final List<Port> inputs;
    /** The declared outputs in the model's order; empty when undeclared (the model's result then names them). */
    private final List<Port> outputs;
    private final boolean batching;
    /** What the accessors below return, made once: the signature never changes, and a call reads them. */
    private final List<TensorSpec> tensorInputs;
    private final List<TensorSpec> tensorOutputs;
    private final List<String> outputNames;
    private final List<Kind> outputKinds;
    private final boolean hasListOutputs;

    /**
     * @throws IllegalStateException with batching, if a declared input or output has a sub-byte dtype
     */
    Signature(String model, List<Port> inputs, List<Port> outputs, boolean batching) {
        this.model = model;
        this.inputs = List.copyOf(inputs);
        this.outputs = List.copyOf(outputs);
        this.batching = batching;
        this.tensorInputs = specs(this.inputs);
        this.tensorOutputs = specs(this.outputs);
        this.outputNames = this.outputs.isEmpty() ? null : this.outputs.stream().map(Port::name).toList();
        this.outputKinds = this.outputs.isEmpty() ? null : this.outputs.stream().map(Port::kind).toList();
        this.hasListOutputs = this.outputs.stream().anyMatch(p -> p.kind() != Kind.TENSOR);
        if (batching) {
            for (Port p : inputs) {
                if (p.kind() == Kind.TENSOR && p.spec().dtype().isSubByte()) {
                    throw new IllegalStateException(subByte(model, "input " + p.name(), p.spec().dtype()));
                }
            }
            for (Port p : outputs) {
                if (p.kind() == Kind.TENSOR && p.spec().dtype().isSubByte()) {
                    throw new IllegalStateException(subByte(model, "output " + p.name(), p.spec().dtype()));
                }
            }
        }
    }

    /** Why batching refuses a sub-byte dtype. */
    private static String subByte(String model, String what, DataType dtype) {
        return "model " + model + ": " + what + " is " + dtype + ", a sub-byte dtype, whose rows need not start "
                + "on a byte: batching cannot stack them; build the model without batching";
    }

    /** {@return the declared tensor inputs, in the model's order} */
    List<TensorSpec> inputs() {
        return tensorInputs;
    }

    /** {@return the declared tensor outputs, in the model's order} */
    List<TensorSpec> outputs() {
        return tensorOutputs;
    }

    List<Port> inputPorts() {
        return inputs;
    }

    List<Port> outputPorts() {
        return outputs;
    }

    /** {@return the names of the declared inputs or outputs of {@code kind}, in the model's order} */
    static List<String> names(List<Port> ports, Kind kind) {
        return ports.stream().filter(p -> p.kind() == kind).map(Port::name).toList();
    }

    private static List<TensorSpec> specs(List<Port> ports) {
        return ports.stream().filter(p -> p.kind() == Kind.TENSOR).map(Port::spec).toList();
    }

    /** {@return whether a declared output is text or values: {@code predict} cannot return it} */
    boolean hasListOutputs() {
        return hasListOutputs;
    }

    /** {@return the declared outputs' names, or null when the model's result names them} */
    List<String> outputNames() {
        return outputNames;
    }

    /** {@return the declared outputs' kinds, or null when undeclared (then every output is a tensor)} */
    List<Kind> outputKinds() {
        return outputKinds;
    }

    /**
     * A call's inputs in the model's order, checked against the declared ones: each a {@link Tensor}
     * or {@link Texts}. Without declared inputs a {@code Tensor} is a tensor input and a
     * {@code String} or {@code List<String>} a text input.
     *
     * @throws IllegalArgumentException naming the input and both values: a missing or unknown name,
     *                                  another dtype, rank or extent, a closed or non-CPU tensor, a
     *                                  tensor for a text input or text for a tensor input, an empty
     *                                  list of texts, a null string or one with a lone surrogate; with
     *                                  batching, inputs without rows or with rows that differ, or of a
     *                                  sub-byte dtype
     */
    List<Object> order(Map<String, ?> given) {
        List<Object> ordered = new ArrayList<>(given.size());
        List<String> names = new ArrayList<>(given.size());
        if (inputs.isEmpty()) {
            given.forEach((name, v) -> {
                names.add(name);
                ordered.add(v instanceof Tensor t ? usable(name, t) : texts(name, v, null));
            });
        } else {
            for (String name : given.keySet()) {
                if (inputs.stream().noneMatch(s -> s.name().equals(name))) {
                    throw new IllegalArgumentException("model " + model + " has no input " + name + "; its inputs are "
                            + inputs.stream().map(Port::name).toList());
                }
            }
            for (Port port : inputs) {
                Object v = given.get(port.name());
                names.add(port.name());
                if (v == null && !given.containsKey(port.name())) {
                    throw new IllegalArgumentException("model " + model + ": input " + port.name() + " is missing; "
                            + "it is declared " + declared(port));
                }
                ordered.add(port.kind() == Kind.TEXT ? texts(port.name(), v, port) : tensor(port, v));
            }
        }
        if (batching) {
            rows(names, ordered);
            for (int i = 0; i < ordered.size(); i++) {
                if (ordered.get(i) instanceof Tensor t && t.dtype().isSubByte()) {
                    throw new IllegalArgumentException(subByte(model, "input " + names.get(i), t.dtype()));
                }
            }
        }
        return ordered;
    }

    private static String declared(Port port) {
        return port.kind() == Kind.TEXT ? "text (a String, or a List<String> of rows)"
                : port.spec().dtype() + " " + Arrays.toString(port.spec().shape());
    }

    private Tensor tensor(Port port, Object v) {
        TensorSpec spec = port.spec();
        if (!(v instanceof Tensor t)) {
            throw new IllegalArgumentException("model " + model + ": input " + port.name() + " is "
                    + (v == null ? "null" : v instanceof String || v instanceof List<?> ? "text" : v.getClass().getName())
                    + "; it is declared " + declared(port) + ": give a Tensor");
        }
        usable(spec.name(), t);
        if (!t.dtype().equals(spec.dtype()) || !spec.accepts(t.shape())) {
            throw new IllegalArgumentException("model " + model + ": input " + spec.name() + " is "
                    + t.dtype() + " " + Arrays.toString(t.shape()) + "; it is declared " + spec.dtype() + " "
                    + Arrays.toString(spec.shape()) + " (-1: any extent)");
        }
        return t;
    }

    /** A text input's rows, checked; {@code port} is null when inputs are undeclared. */
    private Texts texts(String name, Object v, Port port) {
        String what = "model " + model + ": input " + name;
        List<String> rows = switch (v) {
            case String s -> List.of(s);
            case List<?> list -> {
                if (list.isEmpty()) {
                    throw new IllegalArgumentException(what + " is an empty list; a text input has at least one row");
                }
                List<String> checked = new ArrayList<>(list.size());
                for (int i = 0; i < list.size(); i++) {
                    if (!(list.get(i) instanceof String s)) {
                        throw new IllegalArgumentException(what + ": row " + i + " is "
                                + (list.get(i) == null ? "null" : "a " + list.get(i).getClass().getName())
                                + "; a text input's rows are strings");
                    }
                    checked.add(s);
                }
                yield checked;
            }
            case null -> throw new IllegalArgumentException(what + " is null; a text input takes a String or a List<String>");
            case Tensor t -> throw new IllegalArgumentException(what + " is a tensor (" + t.dtype() + " "
                    + Arrays.toString(t.shape()) + "); it is declared text: give a String or a List<String>");
            default -> throw new IllegalArgumentException(what + " is a " + v.getClass().getName() + "; "
                    + (port == null ? "an input is a Tensor, a String or a List<String>" : "it is declared text: give a String or a List<String>"));
        };
        for (int i = 0; i < rows.size(); i++) {
            int at = loneSurrogate(rows.get(i));
            if (at >= 0) {
                throw new IllegalArgumentException(what + ": row " + i + " has a lone surrogate (U+"
                        + String.format("%04X", (int) rows.get(i).charAt(at)) + ") at index " + at
                        + ", which UTF-8 cannot carry to Python");
            }
        }
        return new Texts(rows);
    }

    /** {@return the index of the first UTF-16 surrogate without its pair in {@code s}, or -1} */
    static int loneSurrogate(String s) {
        for (int i = 0, n = s.length(); i < n; i++) {
            char c = s.charAt(i);
            if (Character.isSurrogate(c)) {
                if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                } else {
                    return i;
                }
            }
        }
        return -1;
    }

    private Tensor usable(String name, Tensor t) {
        if (t.isClosed()) {
            throw new IllegalArgumentException("model " + model + ": input " + name + " is closed");
        }
        if (!t.device().equals(Device.CPU)) {
            throw new IllegalArgumentException("model " + model + ": input " + name + " lives on " + t.device()
                    + "; the model takes CPU tensors");
        }
        return t;
    }

    /** {@return the rows of a call: every tensor input's dim 0 and every text input's strings, which must agree} */
    static long rowsOf(List<Object> ordered) {
        Object first = ordered.getFirst();
        return first instanceof Tensor t ? t.shape()[0] : ((Texts) first).rows().size();
    }

    /** The rows of a batched call: every tensor input's dim 0 and every text input's strings, which must agree. */
    private void rows(List<String> names, List<Object> ordered) {
        long rows = -1;
        for (int i = 0; i < ordered.size(); i++) {
            long here;
            if (ordered.get(i) instanceof Tensor t) {
                long[] shape = t.shape();
                if (shape.length == 0) {
                    throw new IllegalArgumentException("model " + model + ": input " + names.get(i)
                            + " is a scalar; with batching every input's dim 0 is its rows");
                }
                here = shape[0];
            } else {
                here = ((Texts) ordered.get(i)).rows().size();
            }
            if (rows >= 0 && here != rows) {
                throw new IllegalArgumentException("model " + model + ": input " + names.get(i) + " has " + here
                        + " rows, the inputs before it " + rows + "; with batching every input has the call's rows");
            }
            rows = here;
        }
    }

    /** {@return the rows of a call's text input, the length each text or value output must have; -1 without one} */
    static long textRows(List<Object> ordered) {
        for (Object o : ordered) {
            if (o instanceof Texts t) {
                return t.rows().size();
            }
        }
        return -1;
    }

    /** {@return what requests must share to be stacked into one batch: each input's kind, and a tensor's dtype and shape after dim 0} */
    static String batchKey(List<Object> ordered) {
        StringBuilder key = new StringBuilder();
        for (Object o : ordered) {
            if (o instanceof Tensor t) {
                long[] s = t.shape();
                key.append(t.dtype()).append(Arrays.toString(Arrays.copyOfRange(s, 1, s.length))).append(';');
            } else {
                key.append("text;");
            }
        }
        return key.toString();
    }

    /**
     * Checks a model call's outputs against the declared ones.
     *
     * @param rows     the batch's rows, which each tensor output's dim 0 must equal; -1 without batching
     * @param listRows the rows each text or value output must have (the batch's, or a text input's); -1 when unknown
     * @throws IllegalStateException naming the output, its dtype and shape (or length), and what was declared
     */
    void checkOutputs(ModelCall.Outputs out, long rows, long listRows) {
        for (int j = 0; j < out.values().size(); j++) {
            String name = out.names().get(j);
            if (out.values().get(j) instanceof List<?> list) {
                if (listRows >= 0 && list.size() != listRows) {
                    throw new IllegalStateException("model " + model + ": output " + name + " has " + list.size()
                            + " rows for a call of " + listRows + " rows; a " + outputs.get(j).kind().name().toLowerCase(java.util.Locale.ROOT)
                            + " output has one item a row");
                }
                continue;
            }
            Tensor t = out.tensor(j);
            long[] shape = t.shape();
            if (!outputs.isEmpty()) {
                TensorSpec spec = outputs.get(j).spec();
                if (!t.dtype().equals(spec.dtype()) || !spec.accepts(shape)) {
                    throw new IllegalStateException("model " + model + ": output " + name + " is " + t.dtype() + " "
                            + Arrays.toString(shape) + "; it is declared " + spec.dtype() + " "
                            + Arrays.toString(spec.shape()) + " (-1: any extent)");
                }
            }
            if (rows >= 0 && (shape.length == 0 || shape[0] != rows)) {
                throw new IllegalStateException("model " + model + ": output " + name + " has shape "
                        + Arrays.toString(shape) + " for a batch of " + rows + " rows; with batching its dim 0 is the rows");
            }
        }
    }

    /** {@return the model's name} */
    String model() {
        return model;
    }

    @Override
    public String toString() {
        return Objects.toString(inputs) + " -> " + outputs;
    }
}
