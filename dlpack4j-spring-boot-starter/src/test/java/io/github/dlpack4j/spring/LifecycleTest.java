package io.github.dlpack4j.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.github.dlpack4j.model.PythonModel;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.SmartLifecycle;

class LifecycleTest {
    @BeforeAll
    static void factories() {
        TestModels.ready();
    }

    /** What the beans in the web server's two shutdown phases saw of the model when they stopped. */
    private static final List<String> SEEN = new CopyOnWriteArrayList<>();

    @Test
    void theModelsCloseAfterTheBeansOfTheWebServersGracefulShutdownAndStopPhasesStopped() {
        SEEN.clear();
        PythonModel[] kept = new PythonModel[1];
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(Dlpack4jAutoConfiguration.class))
                .withPropertyValues("dlpack4j.models.slow.factory=spring_test_models:slow", "dlpack4j.models.slow.args=0.01")
                .withBean("graceful", InPhase.class, () -> new InPhase("graceful",
                        WebServerApplicationContext.GRACEFUL_SHUTDOWN_PHASE))
                .withBean("server", InPhase.class, () -> new InPhase("server",
                        WebServerApplicationContext.START_STOP_LIFECYCLE_PHASE))
                .run(context -> {
                    kept[0] = context.getBean(PythonModel.class);
                    for (InPhase p : context.getBeansOfType(InPhase.class).values()) {
                        p.model = kept[0];
                    }
                });
        assertThat(SEEN).containsExactly("graceful: model open", "server: model open");
        assertThat(kept[0].isClosed()).isTrue();
    }

    /** A bean that stops in a given phase and notes whether the model was still open then. */
    static final class InPhase implements SmartLifecycle {
        private final String name;
        private final int phase;
        /** Running from the start (Spring calls no start() then), until stopped. */
        private volatile boolean stopped;
        volatile PythonModel model;

        InPhase(String name, int phase) {
            this.name = name;
            this.phase = phase;
        }

        @Override
        public void start() {
            stopped = false;
        }

        @Override
        public void stop() {
            stopped = true;
            SEEN.add(name + ": model " + (model.isClosed() ? "closed" : "open"));
        }

        @Override
        public boolean isRunning() {
            return !stopped;
        }

        @Override
        public int getPhase() {
            return phase;
        }
    }
}
