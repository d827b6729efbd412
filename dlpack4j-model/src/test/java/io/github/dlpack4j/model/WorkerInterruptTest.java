package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;

import org.junit.jupiter.api.Test;

/** Review experiment: a future's callback that leaves the model's thread interrupted. */
class WorkerInterruptTest {
    private static final String DOUBLE = """
            import numpy as np

            def make():
                return lambda x: np.from_dlpack(x) * 2
            """;

    @Test
    void aCallbackThatInterruptsTheModelsThreadDoesNotStopTheModel() throws Exception {
        for (boolean batching : new boolean[] {false, true}) {
            PythonModel.Builder b = PythonModel.builder().python(Models.PY).name("interrupt-" + batching)
                    .source(DOUBLE, "make").input("x", DataType.FLOAT32, -1, 2);
            if (batching) {
                b.batching(4, Duration.ofMillis(50));
            }
            try (PythonModel model = b.build();
                 Tensor x = Tensor.of(new float[] {1, 2}, 1, 2);
                 Tensor z = Tensor.of(new float[] {3, 4}, 1, 2)) {
                // a callback that runs on the model's thread and leaves it interrupted (a user's bug,
                // or a library's cancel that interrupts "the current thread")
                CompletableFuture<Void> cb = model.submit(Map.of("x", x)).thenAccept(out -> {
                    out.values().forEach(Tensor::close);
                    Thread.currentThread().interrupt();
                });
                cb.get(5, TimeUnit.SECONDS);
                CompletableFuture<Map<String, Tensor>> next = model.submit(Map.of("x", z));
                Map<String, Tensor> out;
                try {
                    out = next.get(5, TimeUnit.SECONDS);
                } catch (java.util.concurrent.TimeoutException e) {
                    System.out.printf("batching %s: the next call got no answer in 5 s (the model's thread is gone), "
                            + "stats %s%n", batching, model.stats());
                    throw e;
                }
                try (Tensor y = out.get("output")) {
                    assertThat(y.toFloatArray()).containsExactly(6, 8);
                }
            }
        }
    }
}
