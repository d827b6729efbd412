package example.serve.protocol;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.SentenceTransformers;
import io.github.dlpack4j.model.Transformers;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The served models as dlpack4j-model's {@link PythonModel}s, with the service's batching, threads,
 * queue and deadline: mlp and resnet18 each built by
 * {@code serve_models.served(name, weights, torch_threads)} (the models' Python code, a resource of
 * this jar), with its one input and output declared; minilm by dlpack4j-model's
 * {@link SentenceTransformers} from its directory, tiny-lm by its {@link Transformers#chat}.
 */
public final class ServedModels {
    /** How many requests of one model may wait for it by default ({@code --max-queue}); past it the service refuses them. */
    public static final int MAX_QUEUE = 1_000;

    private ServedModels() {
    }

    /**
     * Loads every model of {@code options}, each warmed up and ready.
     *
     * @param py      the process's interpreter
     * @param options the service's settings
     * @return the models by name, in the order they were given
     * @throws PythonException if Python cannot build a model
     */
    public static Map<String, PythonModel> load(Python py, ServeOptions options) {
        register(py);
        Map<String, PythonModel> models = new LinkedHashMap<>();
        try {
            for (String name : options.models()) {
                models.put(name, switch (name) {
                    case ServeOptions.MINILM -> loadMinilm(py, options);
                    case ServeOptions.TINY_LM -> loadTinyLm(py, options);
                    default -> load(py, options, name);
                });
            }
        } catch (RuntimeException e) {
            models.values().forEach(PythonModel::close);
            throw e;
        }
        return models;
    }

    private static PythonModel load(Python py, ServeOptions options, String name) {
        PythonModel.Builder b = PythonModel.builder()
                .name(name)
                .python(py)
                .factory("serve_models", "served", name,
                        options.weights() == null ? null : options.weights().toString(), options.torchThreads())
                .torchInputs() // run(x) gets a torch tensor over the request's memory, made in Java
                .workers(options.runnerThreads(name))
                .maxQueue(options.maxQueue());
        switch (name) {
            case "mlp" -> b.input("x", DataType.FLOAT32, -1, 256).output("y", DataType.FLOAT32, -1, 16);
            case "resnet18" -> b.input("x", DataType.FLOAT32, -1, 3, 224, 224).output("y", DataType.FLOAT32, -1, 1000);
            default -> throw new IllegalArgumentException("no model " + name);
        }
        if (options.batching()) {
            b.batching(options.maxBatch(name), Duration.ofNanos(options.batchWindowMicros() * 1000));
        }
        if (options.timeoutMillis() > 0) {
            b.timeout(Duration.ofMillis(options.timeoutMillis()));
        }
        return b.build();
    }

    /**
     * {@return minilm: {@code SentenceTransformer(dir)} as a model of one text input and two outputs,
     * the embeddings and each text's token count ({@link SentenceTransformers#embeddings})}.
     */
    private static PythonModel loadMinilm(Python py, ServeOptions options) {
        setTorchThreads(py, options);
        SentenceTransformers.Builder b = SentenceTransformers.embeddings(options.weights())
                .python(py)
                .name(ServeOptions.MINILM)
                .chunk(options.chunk())
                .workers(options.runnerThreads(ServeOptions.MINILM))
                .maxQueue(options.maxQueue());
        if (options.batching()) {
            b.batching(options.maxBatch(ServeOptions.MINILM), Duration.ofNanos(options.batchWindowMicros() * 1000));
        }
        if (options.timeoutMillis() > 0) {
            b.timeout(Duration.ofMillis(options.timeoutMillis()));
        }
        return b.build();
    }

    /**
     * {@return tiny-lm: the causal LM's directory as a streaming chat model ({@link Transformers#chat}),
     * one stream a request}: with batching (the default) the streams waiting for their next token at
     * once share one decode step of up to {@code --max-batch} streams, without it the threads take
     * turns over the streams a token at a time; at most {@code --max-queue} more streams than
     * threads are open at once, and {@code --timeout-ms} bounds the wait for a reply's first token.
     */
    private static PythonModel loadTinyLm(Python py, ServeOptions options) {
        setTorchThreads(py, options);
        Transformers.Builder b = Transformers.chat(options.weights())
                .python(py)
                .name(ServeOptions.TINY_LM)
                .workers(options.runnerThreads(ServeOptions.TINY_LM))
                .maxQueue(options.maxQueue());
        if (options.batching()) {
            b.batching(options.maxBatch(ServeOptions.TINY_LM), Duration.ofNanos(options.batchWindowMicros() * 1000));
            b.workers(options.runnerThreads(ServeOptions.TINY_LM));   // --runner-threads, when given, bounds the steps
        }
        if (options.timeoutMillis() > 0) {
            b.timeout(Duration.ofMillis(options.timeoutMillis()));
        }
        return b.build();
    }

    /**
     * Sets torch's intra-op threads: a directory model's threads take the count of the thread that
     * builds it, so it is set first, as {@code serve_models.served} does for mlp and resnet18.
     */
    private static void setTorchThreads(Python py, ServeOptions options) {
        py.withGil(() -> {
            try (PyObject torch = py.importModule("torch")) {
                torch.callMethod("set_num_threads", options.torchThreads()).close();
            }
            return null;
        });
    }

    /**
     * Runs the models' code (the resource {@code serve_models.py}) as the module {@code serve_models},
     * once per process (every service in the JVM shares it), so that a model's factory
     * {@code serve_models:served} finds it.
     *
     * @param py the process's interpreter
     */
    public static void register(Python py) {
        py.withGil(() -> {
            try (PyObject sys = py.importModule("sys");
                 PyObject modules = sys.attr("modules");
                 PyObject present = modules.callMethod("__contains__", "serve_models")) {
                if (present.asBoolean()) {
                    return null;
                }
                try (PyObject types = py.importModule("types");
                     PyObject builtins = py.importModule("builtins");
                     PyObject module = types.callMethod("ModuleType", "serve_models");
                     PyObject namespace = module.attr("__dict__");
                     PyObject code = builtins.callMethod("compile", resource("serve_models.py"), "serve_models.py",
                             "exec")) {
                    // in sys.modules while it runs, as an import would have it (its dataclasses look it up there)
                    modules.callMethod("__setitem__", "serve_models", module).close();
                    try {
                        builtins.callMethod("exec", code, namespace).close();
                    } catch (RuntimeException e) {
                        modules.callMethod("__delitem__", "serve_models").close();
                        throw e;
                    }
                }
            }
            return null;
        });
    }

    private static String resource(String name) {
        try (InputStream in = ServedModels.class.getClassLoader().getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("resource " + name + " is missing from the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
