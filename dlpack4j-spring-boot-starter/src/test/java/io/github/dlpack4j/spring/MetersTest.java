package io.github.dlpack4j.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.model.ModelOverloadedException;
import io.github.dlpack4j.model.ModelTimeoutException;
import io.github.dlpack4j.model.PythonModel;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

class MetersTest {
    @BeforeAll
    static void factories() {
        TestModels.ready();
    }

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(Dlpack4jAutoConfiguration.class, MetricsAutoConfiguration.class,
                    SimpleMetricsExportAutoConfiguration.class));

    private static double requests(MeterRegistry registry, String model, String outcome) {
        return registry.get("dlpack4j.model.requests").tags("model", model, "outcome", outcome).counter().count();
    }

    @Test
    void answeredAndFailedCallsAreCountedAndTimedPerModel() {
        runner.withPropertyValues("dlpack4j.models.slow.factory=spring_test_models:slow", "dlpack4j.models.slow.args=0.01",
                "dlpack4j.models.double.factory=spring_test_models:scale", "dlpack4j.models.double.args=2").run(context -> {
                    assertThat(context).hasNotFailed();
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    PythonModel slow = context.getBean("slow", PythonModel.class);
                    try (Tensor good = Tensor.of(new float[] {1}, 1); Tensor bad = Tensor.of(new float[] {-1}, 1)) {
                        for (int i = 0; i < 3; i++) {
                            slow.predict(good).close();
                        }
                        assertThatThrownBy(() -> slow.predict(bad)).isInstanceOf(RuntimeException.class);
                    }
                    assertThat(requests(registry, "slow", "answered")).isEqualTo(3);
                    assertThat(requests(registry, "slow", "failed")).isEqualTo(1);
                    assertThat(requests(registry, "slow", "rejected")).isZero();
                    assertThat(requests(registry, "slow", "timed_out")).isZero();
                    assertThat(requests(registry, "double", "answered")).isZero();
                    Timer run = registry.get("dlpack4j.model.run").tag("model", "slow").timer();
                    assertThat(run.count()).isEqualTo(4);
                    assertThat(run.mean(TimeUnit.MILLISECONDS)).isGreaterThanOrEqualTo(10);
                    assertThat(registry.get("dlpack4j.model.queue.wait").tag("model", "slow").timer().count()).isEqualTo(4);
                    assertThat(registry.get("dlpack4j.model.batch.rows").tag("model", "slow").summary().totalAmount()).isEqualTo(4);
                    assertThat(registry.get("dlpack4j.model.queue.depth").tag("model", "slow").gauge().value()).isZero();
                });
    }

    @Test
    void rejectedAndTimedOutCallsAreCountedByOutcome() {
        runner.withPropertyValues("dlpack4j.models.slow.factory=spring_test_models:slow", "dlpack4j.models.slow.args=0.2",
                "dlpack4j.models.slow.max-queue=1", "dlpack4j.models.slow.timeout=100ms").run(context -> {
                    assertThat(context).hasNotFailed();
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    PythonModel slow = context.getBean("slow", PythonModel.class);
                    int rejected = 0;
                    List<CompletableFuture<Map<String, Tensor>>> admitted = new ArrayList<>();
                    try (Tensor x = Tensor.of(new float[] {1}, 1)) {
                        for (int i = 0; i < 4; i++) {
                            try {
                                admitted.add(slow.submit(Map.of("input", x)));
                            } catch (ModelOverloadedException e) {
                                rejected++;
                            }
                        }
                        int timedOut = 0;
                        for (CompletableFuture<Map<String, Tensor>> f : admitted) {
                            try {
                                f.get().values().forEach(Tensor::close);
                            } catch (ExecutionException e) {
                                assertThat(e.getCause()).isInstanceOf(ModelTimeoutException.class);
                                timedOut++;
                            }
                        }
                        assertThat(rejected).isPositive();
                        assertThat(timedOut).isPositive();
                        assertThat(requests(registry, "slow", "rejected")).isEqualTo(rejected);
                        assertThat(requests(registry, "slow", "timed_out")).isEqualTo(timedOut);
                    }
                });
    }
}
