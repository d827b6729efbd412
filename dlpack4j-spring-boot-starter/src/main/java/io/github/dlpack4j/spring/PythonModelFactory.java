package io.github.dlpack4j.spring;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.IntConsumer;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.SentenceTransformers;
import io.github.dlpack4j.model.Transformers;
import io.github.dlpack4j.python.Python;

import org.springframework.core.io.ResourceLoader;

/**
 * Builds the {@link PythonModel} of one {@code dlpack4j.models.<name>} entry, checking each property
 * first: a bad one is a {@link ModelPropertyException} naming it and the fix. Closed with the
 * context, after the models (each model bean depends on it), it deletes the temp copies of the
 * models' files ({@link ModelFiles}).
 */
final class PythonModelFactory implements AutoCloseable {
    /** The bean's name, on which each model bean depends. */
    static final String BEAN = "dlpack4jModelFactory";
    static final String PREFIX = "dlpack4j.models.";
    /** The dtypes by their NumPy-style names ({@link DataType#toString()}). */
    private static final Map<String, DataType> DTYPES = dtypes();

    private final Python python;
    private final ModelFiles files;
    private final Map<String, Dlpack4jProperties.Model> models;
    private final Map<String, ModelListenerRelay> relays = new ConcurrentHashMap<>();

    PythonModelFactory(Python python, ResourceLoader resources, Dlpack4jProperties properties) {
        this.python = python;
        this.files = new ModelFiles(resources);
        this.models = properties.models();
    }

    private static Map<String, DataType> dtypes() {
        Map<String, DataType> byName = new TreeMap<>();
        for (Field f : DataType.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == DataType.class) {
                try {
                    DataType d = (DataType) f.get(null);
                    byName.put(d.toString(), d);
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        return byName;
    }

    /** Deletes the temp copies of the models' files. */
    @Override
    public void close() {
        files.close();
    }

    /** {@return the relay of the model {@code name}'s listener: the meters attach to it once bound} */
    ModelListenerRelay relay(String name) {
        return relays.computeIfAbsent(name, n -> new ModelListenerRelay());
    }

    /**
     * Checks the entry's properties and builds its model, named after the entry.
     *
     * @param name the entry's name, the bean's
     * @return the model, loaded and warmed up
     */
    PythonModel create(String name) {
        Dlpack4jProperties.Model m = Objects.requireNonNull(models.get(name), name);
        String at = PREFIX + name + ".";
        String source = source(at, m);
        chat(at, m);
        if (m.sentenceTransformers() != null) {
            declaresItsOwn(at, m, "a sentence-transformers model", "the model's input is its texts (" + SentenceTransformers.TEXT
                    + "), its outputs the embeddings (" + SentenceTransformers.EMBEDDING + ") and each text's token count ("
                    + SentenceTransformers.TOKENS + ").");
            SentenceTransformers.Builder b = SentenceTransformers.embeddings(
                    files.directory(source, m.sentenceTransformers(), name, ModelFiles.Kind.SENTENCE_TRANSFORMERS))
                    .python(python).name(name).listener(relay(name));
            runtime(at, m, b::batching, b::workers, b::maxQueue, b::timeout, b::streamTimeout);
            return b.build();
        }
        if (m.transformersChat() != null) {
            declaresItsOwn(at, m, "a transformers-chat model", "the model's inputs are the messages (" + Transformers.MESSAGES
                    + ") and the generation's parameters (" + Transformers.PARAMETERS + "), its outputs each piece of text ("
                    + Transformers.DELTA + ") and, last, how it finished (" + Transformers.FINISH + ").");
            Transformers.Builder b = Transformers.chat(files.directory(source, m.transformersChat(), name, ModelFiles.Kind.CAUSAL_LM))
                    .python(python).name(name).listener(relay(name));
            runtime(at, m, b::batching, b::workers, b::maxQueue, b::timeout, b::streamTimeout);
            return b.build();
        }
        PythonModel.Builder b = PythonModel.builder().name(name).python(python).listener(relay(name));
        if (m.torchscript() != null) {
            b.torchScript(files.file(source, m.torchscript(), name));
        } else if (m.exportedProgram() != null) {
            b.exportedProgram(files.file(source, m.exportedProgram(), name));
        } else {
            int colon = m.factory().indexOf(':');
            if (colon < 1 || colon == m.factory().length() - 1 || m.factory().indexOf(':', colon + 1) >= 0) {
                throw new ModelPropertyException(source, m.factory(), "not module:function",
                        "Set " + source + " to a module and its function, e.g. my_models:make_mlp.");
            }
            b.factory(m.factory().substring(0, colon), m.factory().substring(colon + 1), m.args().toArray());
        }
        if (m.torchInputs()) {
            b.torchInputs();
        }
        specs(at + "inputs", m.inputs(), b::input);
        specs(at + "outputs", m.outputs(), b::output);
        runtime(at, m, b::batching, b::workers, b::maxQueue, b::timeout, b::streamTimeout);
        return b.build();
    }

    /**
     * {@return the chat defaults of the {@code transformers-chat} entry {@code name}, which
     * {@link #create} checked}
     */
    Dlpack4jProperties.Chat chat(String name) {
        return Objects.requireNonNull(models.get(name), name).chat();
    }

    /**
     * Checks the settings of the runtime that every model has (batching, workers, queue, deadlines)
     * and gives those that are set to the model's builder, through its five setters.
     */
    private static void runtime(String at, Dlpack4jProperties.Model m, BiConsumer<Integer, Duration> batching,
                                IntConsumer workers, IntConsumer maxQueue, Consumer<Duration> timeout,
                                Consumer<Duration> streamTimeout) {
        if (m.batching().maxRows() != null) {
            if (m.batching().maxRows() < 1) {
                throw new ModelPropertyException(at + "batching.max-rows", m.batching().maxRows(),
                        "a batch has at least 1 row", "Set " + at + "batching.max-rows to 1 or more, or remove it to turn batching off.");
            }
            if (m.batching().maxDelay().isNegative()) {
                throw new ModelPropertyException(at + "batching.max-delay", m.batching().maxDelay(),
                        "a delay is zero or more", "Set " + at + "batching.max-delay to 0ms or more, e.g. 2ms.");
            }
            batching.accept(m.batching().maxRows(), m.batching().maxDelay());
        }
        if (m.workers() != null) {
            atLeastOne(at + "workers", m.workers());
            workers.accept(m.workers());
        }
        if (m.maxQueue() != null) {
            atLeastOne(at + "max-queue", m.maxQueue());
            maxQueue.accept(m.maxQueue());
        }
        if (m.timeout() != null) {
            deadline(at + "timeout", m.timeout(), "500ms");
            timeout.accept(m.timeout());
        }
        if (m.streamTimeout() != null) {
            deadline(at + "stream-timeout", m.streamTimeout(), "2m");
            streamTimeout.accept(m.streamTimeout());
        }
    }

    private static void deadline(String property, Duration value, String example) {
        if (value.isNegative() || value.isZero()) {
            throw new ModelPropertyException(property, value, "a deadline is more than zero",
                    "Set " + property + " to more than zero, e.g. " + example + ", or remove it for no deadline.");
        }
    }

    private static void atLeastOne(String property, int value) {
        if (value < 1) {
            throw new ModelPropertyException(property, value, "at least 1", "Set " + property + " to 1 or more.");
        }
    }

    /** {@return the full name of the entry's one source property, checked to be the only one} */
    private static String source(String at, Dlpack4jProperties.Model m) {
        List<String> given = new ArrayList<>();
        if (m.torchscript() != null) {
            given.add(at + "torchscript");
        }
        if (m.exportedProgram() != null) {
            given.add(at + "exported-program");
        }
        if (m.factory() != null) {
            given.add(at + "factory");
        }
        if (m.sentenceTransformers() != null) {
            given.add(at + "sentence-transformers");
        }
        if (m.transformersChat() != null) {
            given.add(at + "transformers-chat");
        }
        if (given.isEmpty()) {
            throw new ModelPropertyException(at + "torchscript", null, "the model has no source", "Set one of " + at + "torchscript, "
                    + at + "exported-program, " + at + "factory, " + at + "sentence-transformers or " + at + "transformers-chat.");
        }
        if (given.size() > 1) {
            throw new ModelPropertyException(given.get(1), String.join(", ", given), "the model has two sources",
                    "Keep one of " + String.join(" and ", given) + ".");
        }
        if (m.factory() == null && !m.args().isEmpty()) {
            throw new ModelPropertyException(at + "args", m.args(), "only a factory takes args",
                    "Remove " + at + "args, or set " + at + "factory to the function that takes them.");
        }
        return given.getFirst();
    }

    /**
     * Refuses the settings of a tensor model on a model that takes texts and declares its own
     * inputs and outputs; {@code signature} says what they are.
     */
    private static void declaresItsOwn(String at, Dlpack4jProperties.Model m, String kind, String signature) {
        declaresNothing(at + "inputs", m.inputs(), kind, signature);
        declaresNothing(at + "outputs", m.outputs(), kind, signature);
        if (m.torchInputs()) {
            throw new ModelPropertyException(at + "torch-inputs", true, kind + " takes texts, not tensors",
                    "Remove " + at + "torch-inputs: " + signature);
        }
    }

    private static void declaresNothing(String property, List<Dlpack4jProperties.Spec> specs, String kind, String signature) {
        if (!specs.isEmpty()) {
            throw new ModelPropertyException(property, String.join(", ", specs.stream().map(s -> String.valueOf(s.name())).toList()),
                    kind + " declares its own inputs and outputs", "Remove " + property + ": " + signature);
        }
    }

    /**
     * Checks the chat defaults: only on a {@code transformers-chat} entry, and each in its range
     * (those of {@link TransformersChatModel.Defaults}, which the {@code ChatModel} bean takes).
     */
    private static void chat(String at, Dlpack4jProperties.Model m) {
        Dlpack4jProperties.Chat c = m.chat();
        if (m.transformersChat() == null) {
            Map<String, Object> given = new LinkedHashMap<>();
            given.put("max-new-tokens", c.maxNewTokens());
            given.put("temperature", c.temperature());
            given.put("top-p", c.topP());
            given.put("seed", c.seed());
            given.put("stop", c.stop().isEmpty() ? null : c.stop());
            given.values().removeIf(Objects::isNull);
            if (!given.isEmpty()) {
                Map.Entry<String, Object> first = given.entrySet().iterator().next();
                throw new ModelPropertyException(at + "chat." + first.getKey(), first.getValue(), "only a transformers-chat model takes"
                        + " chat defaults", "Remove " + at + "chat, or set " + at + "transformers-chat to a causal language model's"
                        + " directory instead of the entry's other source.");
            }
            return;
        }
        if (c.maxNewTokens() != null) {
            atLeastOne(at + "chat.max-new-tokens", c.maxNewTokens());
        }
        if (c.temperature() != null && !(c.temperature() >= 0 && Double.isFinite(c.temperature()))) {
            throw new ModelPropertyException(at + "chat.temperature", c.temperature(), "a temperature is 0 (greedy) or more",
                    "Set " + at + "chat.temperature to 0 for greedy decoding, or more to sample, e.g. 0.7.");
        }
        if (c.topP() != null && !(c.topP() > 0 && c.topP() <= 1)) {
            throw new ModelPropertyException(at + "chat.top-p", c.topP(), "a probability mass is more than 0 and at most 1",
                    "Set " + at + "chat.top-p to more than 0 and at most 1 (1 keeps every token), e.g. 0.9.");
        }
    }

    /** Declares each input or output; {@code declare} is the builder's input or output. */
    private static void specs(String property, List<Dlpack4jProperties.Spec> specs, Declare declare) {
        for (int i = 0; i < specs.size(); i++) {
            Dlpack4jProperties.Spec s = specs.get(i);
            String at = property + "[" + i + "].";
            if (s.name() == null || s.name().isBlank()) {
                throw new ModelPropertyException(at + "name", null, "every input and output has a name",
                        "Set " + at + "name to the name the model's callers use.");
            }
            DataType dtype = s.dtype() == null ? null : DTYPES.get(s.dtype().trim().toLowerCase(Locale.ROOT));
            if (dtype == null) {
                throw new ModelPropertyException(at + "dtype", s.dtype(), s.dtype() == null ? "every input and output has a dtype" : "not a dtype",
                        "Set " + at + "dtype to one of " + String.join(", ", DTYPES.keySet()) + ".");
            }
            long[] shape = s.shape().stream().mapToLong(Long::longValue).toArray();
            for (int d = 0; d < shape.length; d++) {
                if (shape[d] < -1) {
                    throw new ModelPropertyException(at + "shape[" + d + "]", shape[d], "an extent is -1 (any) or at least 0",
                            "Set " + at + "shape[" + d + "] to -1 for any extent, or to the extent itself.");
                }
            }
            declare.declare(s.name(), dtype, shape);
        }
    }

    /** {@link PythonModel.Builder#input} or {@link PythonModel.Builder#output}. */
    @FunctionalInterface
    private interface Declare {
        void declare(String name, DataType dtype, long... shape);
    }
}
