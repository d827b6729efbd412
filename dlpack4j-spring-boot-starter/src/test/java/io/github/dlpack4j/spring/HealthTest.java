package io.github.dlpack4j.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import io.github.dlpack4j.model.PythonModel;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

class HealthTest {
    @BeforeAll
    static void factories() {
        TestModels.ready();
    }

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(Dlpack4jAutoConfiguration.class))
            .withPropertyValues("dlpack4j.models.double.factory=spring_test_models:scale", "dlpack4j.models.double.args=2",
                    "dlpack4j.models.slow.factory=spring_test_models:slow", "dlpack4j.models.slow.args=0.01");

    @Test
    void healthIsUpWithEachModelsStateAndQueueDepthWhenEveryModelIsReady() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            Health h = context.getBean("dlpack4jHealthIndicator", HealthIndicator.class).health();
            assertThat(h.getStatus()).isEqualTo(Status.UP);
            assertThat(h.getDetails()).containsExactly(
                    Map.entry("double", Map.of("state", "ready", "queued", 0)),
                    Map.entry("slow", Map.of("state", "ready", "queued", 0)));
        });
    }

    @Test
    void healthIsDownNamingTheModelThatIsClosed() {
        runner.run(context -> {
            context.getBean("slow", PythonModel.class).close();
            Health h = context.getBean("dlpack4jHealthIndicator", HealthIndicator.class).health();
            assertThat(h.getStatus()).isEqualTo(Status.DOWN);
            assertThat(h.getDetails()).containsEntry("reason", "model slow is closed")
                    .containsEntry("slow", Map.of("state", "closed", "queued", 0))
                    .containsEntry("double", Map.of("state", "ready", "queued", 0));
        });
    }

    @Test
    void withoutModelsHealthIsUpWhenTheInterpreterRuns() {
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(Dlpack4jAutoConfiguration.class)).run(context -> {
            Health h = context.getBean("dlpack4jHealthIndicator", HealthIndicator.class).health();
            assertThat(h.getStatus()).isEqualTo(Status.UP);
            assertThat(h.getDetails()).isEmpty();
        });
    }
}
