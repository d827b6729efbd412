package example.serve;

import io.helidon.webserver.WebServer;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * A Java web service that serves torch models from the embedded CPython with the Open Inference
 * Protocol (KServe v2), on Helidon SE 4: {@code scripts/serve --model mlp|resnet18 [--weights FILE]
 * [--port 8080] [--batching]}. It binds 127.0.0.1 only, prints one line when it is ready, and on
 * SIGTERM (or SIGINT) answers the requests in flight, then exits with status 0.
 */
public final class ServeTorch {
    /** Helidon's start-up lines off: the service prints its own ready line (kept: JUL holds loggers weakly). */
    private static final Logger HELIDON = Logger.getLogger("io.helidon");

    /** How long SIGTERM waits for the requests in flight. */
    static final long DRAIN_MILLIS = 8_000;

    private final ModelRunner runner;
    private final InferenceService service;
    private final WebServer server;

    private ServeTorch(ModelRunner runner, InferenceService service, WebServer server) {
        this.runner = runner;
        this.service = service;
        this.server = server;
    }

    /**
     * Starts the interpreter, the models and the server.
     *
     * @param options the settings
     * @return the running service
     */
    static ServeTorch start(ServeOptions options) {
        ModelRunner runner = ModelRunner.start(options);
        try {
            InferenceService service = new InferenceService(runner, options);
            WebServer server = WebServer.builder()
                    .host("127.0.0.1")
                    .port(options.port())
                    .shutdownHook(false)   // SIGTERM drains first (stop), then exits 0
                    .maxPayloadSize(-1)    // the service's own limit answers 400 with a v2 error body
                    .routing(service::routing)
                    .build()
                    .start();
            return new ServeTorch(runner, service, server);
        } catch (RuntimeException e) {
            runner.close();
            throw e;
        }
    }

    /** {@return the port the server listens on} */
    int port() {
        return server.port();
    }

    /** {@return the HTTP service, for its counters} */
    InferenceService service() {
        return service;
    }

    /**
     * Drains and stops: no new inference requests (503), the ones in flight answered (at most
     * {@link #DRAIN_MILLIS}), then the server and the model threads stopped.
     *
     * @return whether every request in flight was answered
     */
    boolean stop() throws InterruptedException {
        service.startDraining();
        boolean drained = service.awaitIdle(DRAIN_MILLIS);
        server.stop();
        runner.close();
        return drained;
    }

    public static void main(String[] args) throws InterruptedException {
        ServeOptions options;
        try {
            options = ServeOptions.parse(args);
        } catch (ServeOptions.UsageException e) {
            System.err.println("serve: " + e.getMessage());
            System.err.println(ServeOptions.USAGE);
            System.exit(2);
            return;
        }
        HELIDON.setLevel(Level.WARNING);
        ServeTorch serve = start(options);
        CountDownLatch stopped = new CountDownLatch(1);
        SignalHandler onSignal = signal -> Thread.ofPlatform().name("serve-stop").start(() -> {
            try {
                boolean drained = serve.stop();
                System.out.println("serve-torch: stopped on SIG" + signal.getName()
                        + (drained ? ", every request in flight answered" : ", requests still in flight after "
                        + DRAIN_MILLIS + " ms"));
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
                + serve.port() + " (Java + dlpack4j, Helidon SE, " + options.describe() + ")");
        System.out.flush();
        stopped.await();
        System.exit(0);
    }
}
