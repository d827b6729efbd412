package example.serve;

import example.serve.protocol.InferenceProtocol;
import example.serve.protocol.OpenAiChat;
import example.serve.protocol.OpenAiEmbeddings;
import example.serve.protocol.ServeOptions;
import example.serve.protocol.ServedModels;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.python.Python;
import io.helidon.webserver.WebServer;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * A Java web service that serves torch models from the embedded CPython with the Open Inference
 * Protocol (KServe v2), on Helidon SE 4: {@code scripts/serve --model mlp|resnet18 [--weights FILE]
 * [--port 8080] [--batching]}; or a sentence-transformers embedding model with OpenAI's
 * {@code POST /v1/embeddings}: {@code scripts/serve --model minilm [--weights DIR]}; or a causal LM with
 * OpenAI's {@code POST /v1/chat/completions}, streamed or not: {@code scripts/serve --model tiny-lm
 * [--weights DIR]}. It binds
 * 127.0.0.1 only, prints one line when it is ready, and on SIGTERM (or SIGINT) answers the requests
 * in flight, then exits with status 0.
 */
public final class ServeTorch {
    /** Helidon's start-up lines off: the service prints its own ready line (kept: JUL holds loggers weakly). */
    private static final Logger HELIDON = Logger.getLogger("io.helidon");
    /** The JVM's setting of the virtual-thread scheduler's carrier threads ({@link ServeOptions#virtualThreadCarriers}). */
    private static final String CARRIERS = "jdk.virtualThreadScheduler.parallelism";

    /** How long SIGTERM waits for the requests in flight. */
    static final long DRAIN_MILLIS = 8_000;

    private final Map<String, PythonModel> models;
    private final InferenceProtocol protocol;
    private final WebServer server;

    private ServeTorch(Map<String, PythonModel> models, InferenceProtocol protocol, WebServer server) {
        this.models = models;
        this.protocol = protocol;
        this.server = server;
    }

    /**
     * Starts the interpreter, the models and the server.
     *
     * @param options the settings
     * @return the running service
     */
    static ServeTorch start(ServeOptions options) {
        Map<String, PythonModel> models = ServedModels.load(Python.start(), options);
        try {
            InferenceProtocol protocol = new InferenceProtocol(models, options.maxBodyBytes(), options.describe());
            PythonModel minilm = models.get(ServeOptions.MINILM);
            PythonModel tinyLm = models.get(ServeOptions.TINY_LM);
            InferenceService service = new InferenceService(protocol,
                    minilm == null ? null : new OpenAiEmbeddings(minilm, protocol),
                    tinyLm == null ? null : new OpenAiChat(tinyLm, protocol));
            WebServer server = WebServer.builder()
                    .host("127.0.0.1")
                    .port(options.port())
                    .shutdownHook(false)   // SIGTERM drains first (stop), then exits 0
                    .maxPayloadSize(-1)    // the service's own limit answers 400 with a v2 error body
                    // Each event of a streamed reply goes out at once: with Nagle's algorithm a small write
                    // waits for the ACK of the one before it, which the client delays 40 ms on a reused
                    // connection (a keep-alive client's chat stream had its first token 40 ms late).
                    .connectionOptions(o -> o.tcpNoDelay(true))
                    .routing(service::routing)
                    .build()
                    .start();
            if (!server.isRunning()) { // Helidon logs its failure to bind and returns a server that never listened
                throw new IllegalStateException("cannot listen on 127.0.0.1:" + options.port()
                        + " (another process listening there?)");
            }
            return new ServeTorch(models, protocol, server);
        } catch (RuntimeException e) {
            models.values().forEach(PythonModel::close);
            throw e;
        }
    }

    /** {@return the port the server listens on} */
    int port() {
        return server.port();
    }

    /**
     * Drains and stops: no new inference requests (503), the ones in flight answered (at most
     * {@link #DRAIN_MILLIS}), then the server and the models closed (their threads stopped).
     *
     * @return whether every request in flight was answered
     */
    boolean stop() throws InterruptedException {
        protocol.startDraining();
        boolean drained = protocol.awaitIdle(DRAIN_MILLIS);
        server.stop();
        models.values().forEach(PythonModel::close);
        return drained;
    }

    public static void main(String[] args) throws InterruptedException {
        ServeOptions options = ServeOptions.parseOrExit(args);
        // before the first virtual thread, which starts the scheduler with its carriers
        String carriers = System.getProperty(CARRIERS);
        if (carriers == null && options.virtualThreadCarriers() > 0) {
            carriers = String.valueOf(options.virtualThreadCarriers());
            System.setProperty(CARRIERS, carriers);
        }
        HELIDON.setLevel(Level.WARNING);
        ServeTorch serve;
        try {
            serve = start(options);
        } catch (IllegalStateException e) {
            System.out.flush();
            System.err.println("serve-torch: " + e.getMessage());
            System.exit(1);
            return;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        SignalHandler onSignal = signal -> Thread.ofPlatform().name("serve-stop").start(() -> {
            try {
                boolean drained = serve.stop();
                System.out.println("serve-torch: stopped on SIG" + signal.getName()
                        + (drained ? ", every request in flight answered" : ", requests still in flight after "
                        + DRAIN_MILLIS + " ms"));
                System.out.println(serve.protocol.statsLines());
                System.out.flush();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                stopped.countDown();
            }
        });
        Signal.handle(new Signal("TERM"), onSignal);
        Signal.handle(new Signal("INT"), onSignal);
        System.out.println("serve-torch: " + String.join(", ", options.models()) + " ready on http://127.0.0.1:"
                + serve.port() + " (Java + dlpack4j, Helidon SE, " + options.describe() + ", virtual thread carriers "
                + (carriers != null ? carriers : "as many as the cores") + ")");
        System.out.flush();
        stopped.await();
        System.exit(0);
    }
}
