package io.github.dlpack4j.model;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Device;
import io.github.dlpack4j.Tensor;

/**
 * A model's declared inputs and outputs, and the checks made against them: a call's inputs in Java,
 * before Python runs; a model call's outputs after it.
 */
final class Signature {
    private final String model;
    /** The declared inputs; empty when undeclared (a call's map then gives the order). */
    private final List<TensorSpec> inputs;
    /** The declared outputs; empty when undeclared (the model's result then names them). */
    private final List<TensorSpec> outputs;
    private final boolean batching;

    /**
     * @throws IllegalStateException with batching, if a declared input or output has a sub-byte dtype
     */
    Signature(String model, List<TensorSpec> inputs, List<TensorSpec> outputs, boolean batching) {
        this.model = model;
        this.inputs = List.copyOf(inputs);
        this.outputs = List.copyOf(outputs);
        this.batching = batching;
        if (batching) {
            for (TensorSpec spec : inputs) {
                if (spec.dtype().isSubByte()) {
                    throw new IllegalStateException(subByte(model, "input " + spec.name(), spec.dtype()));
                }
            }
            for (TensorSpec spec : outputs) {
                if (spec.dtype().isSubByte()) {
                    throw new IllegalStateException(subByte(model, "output " + spec.name(), spec.dtype()));
                }
            }
        }
    }

    /** Why batching refuses a sub-byte dtype. */
    private static String subByte(String model, String what, DataType dtype) {
        return "model " + model + ": " + what + " is " + dtype + ", a sub-byte dtype, whose rows need not start "
                + "on a byte: batching cannot stack them; build the model without batching";
    }

    List<TensorSpec> inputs() {
        return inputs;
    }

    List<TensorSpec> outputs() {
        return outputs;
    }

    /** {@return the declared outputs' names, or null when the model's result names them} */
    List<String> outputNames() {
        return outputs.isEmpty() ? null : outputs.stream().map(TensorSpec::name).toList();
    }

    /**
     * A call's inputs in the model's order, checked against the declared ones.
     *
     * @throws IllegalArgumentException naming the input and both values: a missing or unknown name,
     *                                  another dtype, rank or extent, a closed or non-CPU tensor; with
     *                                  batching, inputs without rows or with rows that differ, or of a
     *                                  sub-byte dtype
     */
    List<Tensor> order(Map<String, ? extends Tensor> given) {
        List<Tensor> ordered = new ArrayList<>(given.size());
        if (inputs.isEmpty()) {
            given.forEach((name, t) -> ordered.add(usable(name, t)));
        } else {
            for (String name : given.keySet()) {
                if (inputs.stream().noneMatch(s -> s.name().equals(name))) {
                    throw new IllegalArgumentException("model " + model + " has no input " + name + "; its inputs are "
                            + inputs.stream().map(TensorSpec::name).toList());
                }
            }
            for (TensorSpec spec : inputs) {
                Tensor t = given.get(spec.name());
                if (t == null) {
                    throw new IllegalArgumentException("model " + model + ": input " + spec.name() + " is missing; "
                            + "it is declared " + spec.dtype() + " " + Arrays.toString(spec.shape()));
                }
                usable(spec.name(), t);
                if (!t.dtype().equals(spec.dtype()) || !spec.accepts(t.shape())) {
                    throw new IllegalArgumentException("model " + model + ": input " + spec.name() + " is "
                            + t.dtype() + " " + Arrays.toString(t.shape()) + "; it is declared " + spec.dtype() + " "
                            + Arrays.toString(spec.shape()) + " (-1: any extent)");
                }
                ordered.add(t);
            }
        }
        if (batching) {
            rows(given.keySet().stream().toList(), ordered);
            for (int i = 0; i < ordered.size(); i++) {
                DataType dtype = ordered.get(i).dtype();
                if (dtype.isSubByte()) {
                    String name = inputs.isEmpty() ? given.keySet().stream().toList().get(i) : inputs.get(i).name();
                    throw new IllegalArgumentException(subByte(model, "input " + name, dtype));
                }
            }
        }
        return ordered;
    }

    private Tensor usable(String name, Tensor t) {
        if (t == null || t.isClosed()) {
            throw new IllegalArgumentException("model " + model + ": input " + name + " is " + (t == null ? "null" : "closed"));
        }
        if (!t.device().equals(Device.CPU)) {
            throw new IllegalArgumentException("model " + model + ": input " + name + " lives on " + t.device()
                    + "; the model takes CPU tensors");
        }
        return t;
    }

    /** The rows of a batched call: every input's dim 0, which must agree. */
    private void rows(List<String> names, List<Tensor> ordered) {
        long rows = -1;
        for (int i = 0; i < ordered.size(); i++) {
            long[] shape = ordered.get(i).shape();
            String name = inputs.isEmpty() ? names.get(i) : inputs.get(i).name();
            if (shape.length == 0) {
                throw new IllegalArgumentException("model " + model + ": input " + name
                        + " is a scalar; with batching every input's dim 0 is its rows");
            }
            if (rows >= 0 && shape[0] != rows) {
                throw new IllegalArgumentException("model " + model + ": input " + name + " has " + shape[0]
                        + " rows, the inputs before it " + rows + "; with batching every input has the call's rows");
            }
            rows = shape[0];
        }
    }

    /** {@return what requests must share to be stacked into one batch: each input's dtype and shape after dim 0} */
    static String batchKey(List<Tensor> ordered) {
        StringBuilder key = new StringBuilder();
        for (Tensor t : ordered) {
            long[] s = t.shape();
            key.append(t.dtype()).append(Arrays.toString(Arrays.copyOfRange(s, 1, s.length))).append(';');
        }
        return key.toString();
    }

    /**
     * Checks a model call's outputs against the declared ones.
     *
     * @param rows the batch's rows, which each output's dim 0 must equal; -1 without batching
     * @throws IllegalStateException naming the output, its dtype and shape, and what was declared
     */
    void checkOutputs(ModelCall.Outputs out, long rows) {
        for (int j = 0; j < out.tensors().size(); j++) {
            Tensor t = out.tensors().get(j).tensor();
            long[] shape = t.shape();
            String name = out.names().get(j);
            if (!outputs.isEmpty()) {
                TensorSpec spec = outputs.get(j);
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
}
