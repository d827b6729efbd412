package io.github.dlpack4j.spring;

import java.util.List;

import io.github.dlpack4j.model.PythonModel;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.SmartLifecycle;

/**
 * Closes every model, each answering the calls it has admitted, in a {@link SmartLifecycle} phase
 * that stops after the web server's graceful shutdown and after the web server itself: with
 * {@code server.shutdown=graceful} the requests in flight get their answers, and no new one comes.
 */
final class PythonModelLifecycle implements SmartLifecycle {
    /**
     * Below {@link WebServerApplicationContext#GRACEFUL_SHUTDOWN_PHASE} (the phase of
     * {@code WebServerGracefulShutdownLifecycle}) and {@link WebServerApplicationContext#START_STOP_LIFECYCLE_PHASE}
     * (the web server's own, 1024 below it): a lower phase stops later.
     */
    static final int PHASE = WebServerApplicationContext.START_STOP_LIFECYCLE_PHASE - 1024;

    private final ObjectProvider<PythonModel> models;
    private volatile boolean running;

    PythonModelLifecycle(ObjectProvider<PythonModel> models) {
        this.models = models;
    }

    @Override
    public void start() {
        running = true;
    }

    @Override
    public void stop() {
        List<PythonModel> all = models.stream().toList();
        all.parallelStream().forEach(PythonModel::close);
        running = false;
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }
}
