package io.github.dlpack4j.model;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

import io.github.dlpack4j.Tensor;

/**
 * The outputs of one call of {@link PythonModel#run(Map)}, by name in the model's order: tensors,
 * texts (a string a row) and values (a JSON-like value a row: {@code Map<String, Object>},
 * {@code List<Object>}, {@code String}, {@code Long}, {@code Double}, {@code Boolean} or
 * {@code null}). With batching each call gets its own rows. The result owns its tensors and closes
 * them in {@link #close()}; to keep one past that, take {@link Tensor#share()} of it. Texts and
 * values are plain Java objects, readable after close.
 *
 * {@snippet :
 * try (PythonModel model = SentenceTransformers.embeddings(Path.of("all-MiniLM-L6-v2")).build();
 *      ModelResult r = model.run(Map.of("text", List.of("a cat", "a kitten")))) {
 *     float[] embeddings = r.tensor("embedding").toFloatArray();  // 2 x 384, row-major
 *     List<Object> tokens = r.values("tokens");                  // [4L, 5L]
 * }
 * }
 */
public final class ModelResult implements AutoCloseable {
    /** Each output: a {@link Tensor}, or an unmodifiable {@code List} of a text or value output. */
    private final Map<String, Object> outputs;
    /** The names of the text outputs (their lists hold strings only). */
    private final Set<String> textNames;
    private final AtomicBoolean closed = new AtomicBoolean();

    ModelResult(Map<String, Object> outputs, Set<String> textNames) {
        this.outputs = Collections.unmodifiableMap(new LinkedHashMap<>(outputs));
        this.textNames = Set.copyOf(textNames);
    }

    /** {@return the outputs' names, in the model's order} */
    public Set<String> names() {
        return outputs.keySet();
    }

    /**
     * {@return the tensor output {@code name}, owned by this result (closed by {@link #close()})}
     *
     * @param name the output's name
     * @throws IllegalArgumentException if the model has no such output, or it is not a tensor
     * @throws IllegalStateException    if the result is closed
     */
    public Tensor tensor(String name) {
        if (closed.get()) {
            throw new IllegalStateException("the result is closed: its tensors are let go");
        }
        if (output(name, "tensor") instanceof Tensor t) {
            return t;
        }
        throw notA(name, "tensor");
    }

    /**
     * {@return the strings of the text output {@code name}, one a row, unmodifiable}
     *
     * @param name the output's name
     * @throws IllegalArgumentException if the model has no such output, or it is not a text output
     */
    @SuppressWarnings("unchecked")
    public List<String> texts(String name) {
        Object o = output(name, "text");
        if (!textNames.contains(name)) {
            throw notA(name, "text");
        }
        return (List<String>) o;
    }

    /**
     * {@return the one string of the text output {@code name}: the call had one row}
     *
     * @param name the output's name
     * @throws IllegalArgumentException if the model has no such output, it is not a text output, or
     *                                  it has more than one row (use {@link #texts})
     */
    public String text(String name) {
        List<String> texts = texts(name);
        if (texts.size() != 1) {
            throw new IllegalArgumentException("output " + name + " has " + texts.size() + " rows: use texts(\""
                    + name + "\")");
        }
        return texts.getFirst();
    }

    /**
     * {@return the values of the value output {@code name}, one a row, unmodifiable (a row may be null)}
     *
     * @param name the output's name
     * @throws IllegalArgumentException if the model has no such output, or it is not a value output
     */
    @SuppressWarnings("unchecked")
    public List<Object> values(String name) {
        Object o = output(name, "value");
        if (!(o instanceof List<?>) || textNames.contains(name)) {
            throw notA(name, "value");
        }
        return (List<Object>) o;
    }

    /**
     * {@return the one value of the value output {@code name}: the call had one row}
     *
     * @param name the output's name
     * @throws IllegalArgumentException if the model has no such output, it is not a value output, or
     *                                  it has more than one row (use {@link #values})
     */
    public Object value(String name) {
        List<Object> values = values(name);
        if (values.size() != 1) {
            throw new IllegalArgumentException("output " + name + " has " + values.size() + " rows: use values(\""
                    + name + "\")");
        }
        return values.getFirst();
    }

    private Object output(String name, String wanted) {
        Object o = outputs.get(name);
        if (o == null) {
            throw new IllegalArgumentException("no output " + name + " (asked for a " + wanted + " output); the outputs are "
                    + outputs.keySet());
        }
        return o;
    }

    private IllegalArgumentException notA(String name, String wanted) {
        Object o = outputs.get(name);
        String is = o instanceof Tensor ? "a tensor" : textNames.contains(name) ? "a text output" : "a value output";
        return new IllegalArgumentException("output " + name + " is " + is + ", not a " + wanted + " output");
    }

    /**
     * {@return the tensor outputs by name, in the model's order: the same tensors, for a caller of
     * {@code predict} who owns them from now on (this result is then dropped unclosed; closing it
     * instead closes them)}
     */
    Map<String, Tensor> takeTensors() {
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        outputs.forEach((n, o) -> {
            if (o instanceof Tensor t) {
                tensors.put(n, t);
            }
        });
        return tensors;
    }

    /** Closes the tensors this result holds; idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            for (Object o : outputs.values()) {
                if (o instanceof Tensor t) {
                    t.close();
                }
            }
        }
    }

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder("ModelResult[");
        outputs.forEach((n, o) -> s.append(s.length() > 12 ? ", " : "").append(n).append('=')
                .append(o instanceof Tensor t ? t.toString() : ((List<?>) o).size() + " rows"));
        return s.append(']').toString();
    }
}
