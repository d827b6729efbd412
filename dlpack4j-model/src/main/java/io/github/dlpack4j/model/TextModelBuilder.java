package io.github.dlpack4j.model;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

/**
 * What the builders of models loaded from a directory by the Python helpers of
 * {@code dlpack4j_text.py} share ({@link SentenceTransformers.Builder}, {@link Transformers.Builder}):
 * the runtime's settings, passed on to {@link PythonModel.Builder}, and the load: the helper loads
 * the model once and keeps it under a key, whose factory the {@code PythonModel} takes it by.
 *
 * @param <B> the builder's own type
 */
abstract class TextModelBuilder<B extends TextModelBuilder<B>> {
    private final Path dir;
    /** The runtime's settings, made on each build's own {@link PythonModel.Builder} (a builder takes one source). */
    private final List<Consumer<PythonModel.Builder>> runtime = new ArrayList<>();
    private Python python;
    private String name;

    TextModelBuilder(Path dir) {
        this.dir = Objects.requireNonNull(dir, "dir").toAbsolutePath();
    }

    abstract B self();

    /**
     * The interpreter to load the model into; {@link Python#start()} when not given.
     *
     * @param python the process's interpreter
     * @return this builder
     */
    public B python(Python python) {
        this.python = Objects.requireNonNull(python, "python");
        return self();
    }

    /**
     * Names the model (in errors, thread names, stats and JFR events); the directory's name by default.
     *
     * @param name the model's name
     * @return this builder
     */
    public B name(String name) {
        this.name = Objects.requireNonNull(name, "name");
        return self();
    }

    /**
     * Dynamic batching across callers, as {@link PythonModel.Builder#batching}: the texts of the
     * requests in a batch run as one model call.
     *
     * @param maxBatchRows the most rows (texts) of one model call, at least 1
     * @param maxDelay     the longest a batch waits for more requests
     * @return this builder
     */
    public B batching(int maxBatchRows, Duration maxDelay) {
        return runtime(m -> m.batching(maxBatchRows, maxDelay));
    }

    /**
     * How many model calls may run at once, as {@link PythonModel.Builder#workers}.
     *
     * @param calls the number of the model's threads, at least 1
     * @return this builder
     */
    public B workers(int calls) {
        return runtime(m -> m.workers(calls));
    }

    /**
     * How many requests may wait, as {@link PythonModel.Builder#maxQueue}.
     *
     * @param requests the queue's size, at least 1
     * @return this builder
     */
    public B maxQueue(int requests) {
        return runtime(m -> m.maxQueue(requests));
    }

    /**
     * A deadline per call (for a stream: to its first item), as {@link PythonModel.Builder#timeout}.
     *
     * @param perCall the deadline, more than zero
     * @return this builder
     */
    public B timeout(Duration perCall) {
        return runtime(m -> m.timeout(perCall));
    }

    /**
     * A deadline per stream as a whole, as {@link PythonModel.Builder#streamTimeout}.
     *
     * @param perStream the deadline, more than zero
     * @return this builder
     */
    public B streamTimeout(Duration perStream) {
        return runtime(m -> m.streamTimeout(perStream));
    }

    /**
     * A listener of each request's outcome, as {@link PythonModel.Builder#listener}.
     *
     * @param listener the listener, quick and never throwing
     * @return this builder
     */
    public B listener(ModelListener listener) {
        return runtime(m -> m.listener(listener));
    }

    /** Checks a runtime setting's arguments now, as {@link PythonModel.Builder} does, and keeps it for every build. */
    private B runtime(Consumer<PythonModel.Builder> setting) {
        setting.accept(PythonModel.builder());
        runtime.add(setting);
        return self();
    }

    /**
     * Loads the model with the helper {@code loader(dir, "cpu")}, whose result's first item is its
     * key, lets {@code declare} give the {@code PythonModel}'s factory and signature from what it
     * returned, and builds the model; a model that no factory took is let go.
     */
    PythonModel build(String loader, BiConsumer<PythonModel.Builder, List<?>> declare) {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException(dir + " is not a directory: give a model's directory");
        }
        Python py = python != null ? python : Python.start();
        PythonModel.Builder model = PythonModel.builder().python(py);
        runtime.forEach(setting -> setting.accept(model));
        List<?> loaded = py.withGil(() -> {
            try (PyObject helpers = PythonModules.module(py, SentenceTransformers.HELPERS);
                 PyObject r = helpers.callMethod(loader, dir.toString(), "cpu")) {
                return (List<?>) r.toJava();
            }
        });
        long key = (Long) loaded.get(0);
        try {
            model.name(name != null ? name : dir.getFileName().toString());
            declare.accept(model, loaded);
            return model.build();
        } finally { // the factory took the model, or failed before: either way it is not kept twice
            py.withGil(() -> {
                try (PyObject helpers = PythonModules.module(py, SentenceTransformers.HELPERS)) {
                    helpers.callMethod("discard", key).close();
                }
            });
        }
    }
}
