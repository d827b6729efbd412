package io.github.dlpack4j.model;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.ExchangeApi;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import io.github.dlpack4j.python.PythonException;

/**
 * The model in the interpreter, and one call of it on Java tensors: the inputs exported without a
 * copy, the callable run by the convention of {@code dlpack4j_model.py} (its {@code Runner}), the
 * outputs imported without a copy. Every method takes the GIL for itself, once.
 */
final class ModelCall {
    /** The helper module's name in {@code sys.modules}: made once per interpreter. */
    private static final String HELPERS = "dlpack4j_model";

    private final Python python;
    /** The {@code Runner} around the model's callable. */
    private final PyObject runner;
    /** What a call calls: the {@code Runner}'s {@code entry()}: the {@code Runner} itself, or a plain function for the common case. */
    private final PyObject entry;
    /** What a stream's step calls: the {@code Runner}'s {@code stepper()}, a plain function. */
    private final PyObject stepper;
    /**
     * Whether this thread has the model's torch settings ({@code Runner.prepare_thread}): checked in
     * Java, once per thread, rather than through a Python thread-local on every call.
     */
    private final ThreadLocal<Boolean> prepared = new ThreadLocal<>();
    /** The model's name, for errors. */
    private final String name;
    /** The declared outputs' names, or null when the model's result names them. */
    private final List<String> outputNames;
    /** The declared outputs' kinds, or null when undeclared (every output is a tensor). */
    private final List<Signature.Kind> outputKinds;
    /**
     * torch's C Exchange API, when the model takes torch tensors: the inputs become torch tensors
     * in Java, without {@code torch.from_dlpack} in Python; null otherwise.
     */
    private final ExchangeApi torch;

    private ModelCall(Python python, String name, PyObject runner, List<String> outputNames,
                      List<Signature.Kind> outputKinds, ExchangeApi torch) {
        this.python = python;
        this.name = name;
        this.outputKinds = outputKinds;
        this.runner = runner;
        PyObject call = runner.callMethod("entry");
        try {
            this.stepper = runner.callMethod("stepper");
        } catch (RuntimeException | Error e) {
            call.close();
            throw e;
        }
        this.entry = call;
        this.outputNames = outputNames;
        this.torch = torch;
    }

    /**
     * Loads the model's callable.
     *
     * @param torchInputs whether the callable takes torch tensors rather than dlpack4j's Python tensors
     * @param outputNames the declared outputs' names, or null
     * @param outputKinds the declared outputs' kinds, or null
     * @param batching    whether the model will run on batches (an exported program must then have a dynamic dim 0)
     * @throws io.github.dlpack4j.python.PythonException if Python cannot load it
     * @throws IllegalStateException if an exported program's dim 0 is static while batching is on
     */
    static ModelCall load(Python python, String name, ModelSource source, boolean torchInputs, List<String> outputNames,
                          List<Signature.Kind> outputKinds, boolean batching) {
        return python.withGil(() -> {
            try (PyObject helpers = helpers(python);
                 PyObject model = loadCallable(helpers, name, source, batching)) {
                ExchangeApi torch = torchInputs ? torchExchangeApi(python) : null;
                // Without torch's exchange API the Runner makes the torch tensors in Python.
                boolean listOutput = outputKinds != null && outputKinds.size() == 1
                        && outputKinds.getFirst() != Signature.Kind.TENSOR;
                List<String> textOutputs = new ArrayList<>();
                for (int j = 0; outputKinds != null && j < outputKinds.size(); j++) {
                    if (outputKinds.get(j) == Signature.Kind.TEXT) {
                        textOutputs.add(outputNames.get(j));
                    }
                }
                PyObject runner = helpers.callMethod("Runner", name, model, torchInputs && torch == null,
                        outputNames, listOutput, textOutputs);
                try {
                    return new ModelCall(python, name, runner, outputNames, outputKinds, torch);
                } catch (RuntimeException | Error e) {
                    runner.close();
                    throw e;
                }
            }
        });
    }

    private static PyObject loadCallable(PyObject helpers, String name, ModelSource source, boolean batching) {
        return switch (source) {
            case ModelSource.TorchScript(var file) -> helpers.callMethod("load_torchscript", file.toString());
            case ModelSource.Factory(var module, var function, var args) ->
                    helpers.callMethod("load_factory", module, function, args);
            case ModelSource.Source(var code, var function, var args) ->
                    helpers.callMethod("load_source", name, code, function, args);
            case ModelSource.ExportedProgram(var file) -> {
                try (PyObject loaded = helpers.callMethod("load_exported", file.toString());
                     PyObject staticInputs = loaded.get(1)) {
                    List<?> fixed = (List<?>) staticInputs.toJava();
                    if (batching && !fixed.isEmpty()) {
                        throw new IllegalStateException("model " + name + ": the exported program " + file
                                + " cannot batch: its inputs " + fixed + " have a static dim 0; export it with "
                                + "torch.export.Dim for dim 0, or build the model without batching");
                    }
                    yield loaded.get(0);
                }
            }
        };
    }

    /** {@return torch's C Exchange API (DLPack 1.3), or null if this torch has none; the caller holds the GIL} */
    private static ExchangeApi torchExchangeApi(Python python) {
        try (PyObject torch = python.importModule("torch");
             PyObject sample = torch.callMethod("empty", 0)) {
            return ExchangeApi.fromObject(sample).orElse(null);
        }
    }

    /** The helper module, run once per interpreter (the caller holds the GIL). */
    private static PyObject helpers(Python python) {
        return PythonModules.module(python, HELPERS);
    }

    /**
     * Calls the model once, in one GIL scope: the tensor inputs go to Python without a copy, text
     * inputs as lists of {@code str}; tensor outputs come back imported through DLPack, text and
     * value outputs converted to Java ({@link Values}). The caller closes the outputs.
     *
     * @param inputs the inputs in the model's order: each a {@link Tensor} or {@link Signature.Texts}
     * @return the outputs, by name in the model's order
     * @throws io.github.dlpack4j.python.PythonException if the model raised
     * @throws IllegalStateException if a text or value output is not a list of what it declares
     */
    Outputs call(List<Object> inputs) {
        return python.withGil(() -> {
            prepare();
            PyObject[] args = args(inputs);
            List<Object> values = new ArrayList<>();
            try {
                try (PyObject result = entry.call((Object[]) args)) {
                    return outputs(result, values);
                }
            } catch (RuntimeException | Error e) {
                new Outputs(List.of(), values).close();
                throw e;
            } finally {
                closeAll(args);
            }
        });
    }

    /**
     * The build's first call, in one GIL scope: a generator model's first item is made and its
     * generator closed (null is returned: the model streams); any other model's outputs come back
     * as {@link #call} returns them.
     *
     * @throws io.github.dlpack4j.python.PythonException if the model raised
     */
    Outputs warmUp(List<Object> inputs) {
        return python.withGil(() -> {
            prepare();
            PyObject[] args = args(inputs);
            List<Object> values = new ArrayList<>();
            try (PyObject result = runner.callMethod("warm_up", (Object[]) args)) {
                return result.isNone() ? null : outputs(result, values);
            } catch (RuntimeException | Error e) {
                new Outputs(List.of(), values).close();
                throw e;
            } finally {
                closeAll(args);
            }
        });
    }

    /** A call's result (by the Runner's convention) as outputs; those made so far go into {@code values}. */
    private Outputs outputs(PyObject result, List<Object> values) {
        if (outputNames != null && outputNames.size() == 1) { // the Runner returns it alone
            values.add(output(outputNames.getFirst(), outputKinds.getFirst(), result));
            return new Outputs(outputNames, values);
        }
        if (outputNames != null) { // the values, in the declared order
            for (int j = 0; j < outputNames.size(); j++) {
                try (PyObject v = result.get(j)) {
                    values.add(output(outputNames.get(j), outputKinds.get(j), v));
                }
            }
            return new Outputs(outputNames, values);
        }
        try (PyObject all = result.get(1)) { // (names, values)
            List<String> names = names(result);
            for (int j = 0; j < names.size(); j++) {
                try (PyObject v = all.get(j)) {
                    values.add(PythonDlpack.fromDlpack(v));
                }
            }
            return new Outputs(names, values);
        }
    }

    /**
     * Starts a stream: the model's call on the inputs, in one GIL scope, whose result (a generator
     * or another iterable) the stream's steps advance. The caller closes the iterator it returns
     * ({@link #closeStream}).
     *
     * @throws io.github.dlpack4j.python.PythonException if the model raised, or returned no iterable
     */
    PyObject startStream(List<Object> inputs) {
        return python.withGil(() -> {
            prepare();
            PyObject[] args = args(inputs);
            try {
                return runner.callMethod("start", (Object[]) args);
            } finally {
                closeAll(args);
            }
        });
    }

    /**
     * A stream's next item, in one GIL scope: its outputs (a tensor imported; a text output's str
     * and a value output's value as one row), or null once the iterator ended. An item whose values
     * are all str, int, float, bool, None, dict, list or tuple (Python's runner says so by its
     * shape) converts in one pass; one with a tensor, or a tensor output declared, one value at a
     * time: both refuse the same values with the same errors.
     *
     * @throws io.github.dlpack4j.python.PythonException if the model raised
     * @throws IllegalStateException if an item's output is not what it declares
     */
    ModelResult step(PyObject items) {
        return python.withGil(() -> {
            prepare();
            try (PyObject item = stepper.call(items)) {
                if (item.isNone()) {
                    return null;
                }
                ModelResult plain = plainItem(item);
                return plain != null ? plain : itemByValue(item);
            }
        });
    }

    /** {@return an item of plain values converted in one pass, or null if it has a tensor or declares one} */
    private ModelResult plainItem(PyObject item) {
        Object whole;
        try {
            whole = item.toJava();
        } catch (PythonException | IllegalArgumentException e) {
            return null; // a str UTF-8 cannot carry, nested too deep: refused where the one-by-one route refuses it
        }
        if (!(whole instanceof List<?> parts)) { // the runner's _Objects: a value of another type
            Values.closeAll(whole);
            return null;
        }
        List<?> names = (List<?>) parts.get(0);
        List<?> values = (List<?>) parts.get(1);
        Signature.Kind[] kinds = new Signature.Kind[names.size()];
        for (int j = 0; j < kinds.length; j++) {
            kinds[j] = declaredKind(String.valueOf(names.get(j))); // the name as names() makes it
            if (kinds[j] == Signature.Kind.TENSOR) {
                Values.closeAll(whole); // a tensor output's refusal of a plain value is fromDlpack's
                return null;
            }
        }
        Map<String, Object> outputs = new LinkedHashMap<>();
        Set<String> texts = new HashSet<>();
        for (int j = 0; j < names.size(); j++) {
            String output = String.valueOf(names.get(j));
            Object java = values.get(j);
            Signature.Kind kind = kinds[j];
            try {
                if (kind == Signature.Kind.TEXT) {
                    outputs.put(output, List.of(Values.text(this.name, output, java)));
                    texts.add(output);
                } else if (kind == null && java instanceof String s) {
                    outputs.put(output, List.of(s));
                    texts.add(output);
                } else {
                    outputs.put(output, Values.one(this.name, output, java));
                }
            } catch (RuntimeException | Error e) {
                for (int k = j + 1; k < values.size(); k++) {
                    Values.closeAll(values.get(k));
                }
                new ModelResult(outputs, texts).close();
                throw e;
            }
        }
        return new ModelResult(outputs, texts);
    }

    /** {@return an item converted one value at a time (a tensor imported by DLPack)} */
    private ModelResult itemByValue(PyObject item) {
        List<String> names = names(item);
        Map<String, Object> outputs = new LinkedHashMap<>();
        Set<String> texts = new HashSet<>();
        try (PyObject all = item.get(1)) {
            for (int j = 0; j < names.size(); j++) {
                try (PyObject v = all.get(j)) {
                    outputs.put(names.get(j), streamOutput(names.get(j), v, texts));
                }
            }
            return new ModelResult(outputs, texts);
        } catch (RuntimeException | Error e) {
            new ModelResult(outputs, texts).close();
            throw e;
        }
    }

    /** Closes a stream's iterator (a generator's {@code finally} runs) and lets go of it. */
    void closeStream(PyObject items) {
        python.withGil(() -> {
            try {
                runner.callMethod("close_stream", items).close();
            } finally {
                items.close();
            }
        });
    }

    /**
     * One output of a stream's item, as the result holds it (a tensor of its own, or a one-row
     * list): a declared output as its kind says, an undeclared one by its Python type (an object
     * with {@code __dlpack__} a tensor, a str a text, anything else a value). A text output's name
     * goes into {@code texts}.
     */
    private Object streamOutput(String output, PyObject value, Set<String> texts) {
        Signature.Kind kind = declaredKind(output);
        if (kind == null) { // undeclared: by its Python type
            if (!value.hasAttr("__dlpack__")) {
                Object java = itemValue(output, value);
                if (java instanceof String s) {
                    texts.add(output);
                    return List.of(s);
                }
                return Values.one(this.name, output, java);
            }
            kind = Signature.Kind.TENSOR;
        }
        return switch (kind) {
            case TENSOR -> {
                try (ManagedTensor m = PythonDlpack.fromDlpack(value)) {
                    yield m.tensor().share();
                }
            }
            case TEXT -> {
                texts.add(output);
                yield List.of(Values.text(this.name, output, itemValue(output, value)));
            }
            case VALUE -> Values.one(this.name, output, itemValue(output, value));
        };
    }

    /** {@return output {@code output}'s declared kind, or null when the model declares no outputs} */
    private Signature.Kind declaredKind(String output) {
        return outputNames != null ? outputKinds.get(outputNames.indexOf(output)) : null;
    }

    /** {@return a stream item's output by {@code toJava}; one that does not convert (a str UTF-8 cannot carry, nesting too deep) names its output} */
    private Object itemValue(String output, PyObject value) {
        try {
            return value.toJava();
        } catch (PythonException | IllegalArgumentException e) {
            throw new IllegalStateException("model " + name + ": output " + output + " of a stream's item cannot be "
                    + "converted to Java: " + String.valueOf(e.getMessage()).lines().findFirst().orElse(""), e);
        }
    }

    private void prepare() {
        if (prepared.get() == null) {
            runner.callMethod("prepare_thread").close();
            prepared.set(Boolean.TRUE);
        }
    }

    /** The inputs as Python objects: tensors without a copy, texts as lists of {@code str}. */
    private PyObject[] args(List<Object> inputs) {
        PyObject[] args = new PyObject[inputs.size()];
        try {
            for (int i = 0; i < args.length; i++) {
                args[i] = switch (inputs.get(i)) {
                    case Tensor t -> torch != null ? torch.toPyObject(t) : PythonDlpack.toPython(t);
                    case Signature.Texts texts -> python.toPython(texts.rows());
                    default -> throw new IllegalStateException("not an input: " + inputs.get(i));
                };
            }
        } catch (RuntimeException | Error e) {
            closeAll(args);
            throw e;
        }
        return args;
    }

    private static void closeAll(PyObject[] args) {
        for (PyObject a : args) {
            if (a != null) {
                a.close();
            }
        }
    }

    /** One output: a tensor imported, or a text or value output's list converted. */
    private Object output(String name, Signature.Kind kind, PyObject value) {
        return switch (kind) {
            case TENSOR -> PythonDlpack.fromDlpack(value);
            case TEXT -> Values.texts(this.name, name, value);
            case VALUE -> Values.values(this.name, name, value);
        };
    }

    private static List<String> names(PyObject result) {
        try (PyObject n = result.get(0)) {
            return ((List<?>) n.toJava()).stream().map(String::valueOf).toList();
        }
    }

    /** Lets go of the model's callable. */
    void close() {
        python.withGil(() -> {
            entry.close();
            stepper.close();
            runner.close();
        });
    }

    /**
     * A model call's outputs: each an imported tensor ({@link ManagedTensor}, which closes the
     * producer's tensor when its last view is closed) or a text or value output's list.
     *
     * @param names  the outputs' names, in the model's order
     * @param values the outputs, in the same order
     */
    record Outputs(List<String> names, List<Object> values) implements AutoCloseable {
        /** {@return output {@code j}'s tensor; it must be a tensor output} */
        Tensor tensor(int j) {
            return ((ManagedTensor) values.get(j)).tensor();
        }

        @Override
        public void close() {
            for (Object v : values) {
                if (v instanceof ManagedTensor m) {
                    m.close();
                }
            }
        }
    }
}
