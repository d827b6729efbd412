package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class CloseTest {
    @BeforeAll
    static void latch() {
        Models.pythonModule("latch", """
                import threading
                import numpy as np

                release = threading.Event()

                def make():
                    def run(x):
                        release.wait(30)  # lets the GIL go while it waits
                        return np.from_dlpack(x) * 2
                    return run
                """);
    }

    private static PythonModel latched(PythonModel.Builder b) {
        Models.PY.exec("import latch\nlatch.release.clear()");
        return b.python(Models.PY).name("latch").factory("latch", "make").build();
    }

    private static void release() {
        Models.PY.exec("import latch\nlatch.release.set()");
    }

    @Test
    void closeAnswersEveryRequestAlreadyAdmitted() throws Exception {
        PythonModel model = latched(PythonModel.builder());
        try (Tensor x = Tensor.of(new float[] {1}, 1)) {
            List<CompletableFuture<Map<String, Tensor>>> admitted = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                admitted.add(model.submit(Map.of("x", x)));
            }
            Thread closer = Thread.ofPlatform().start(model::close);
            Thread.sleep(100);
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(IllegalStateException.class);
            release();
            closer.join();
            for (CompletableFuture<Map<String, Tensor>> f : admitted) {
                try (Tensor y = f.join().get("output")) {
                    assertThat(y.getDouble(0)).isEqualTo(2);
                }
            }
            assertThat(model.stats().answered()).isEqualTo(3);
        }
    }

    @Test
    void closeReturnsWithinTheDeadlineAndFailsWhatCouldNotRun() {
        PythonModel model = latched(PythonModel.builder().timeout(Duration.ofMillis(300)));
        try (Tensor x = Tensor.of(new float[] {1}, 1)) {
            CompletableFuture<Map<String, Tensor>> first = model.submit(Map.of("x", x));
            CompletableFuture<Map<String, Tensor>> second = model.submit(Map.of("x", x));
            long start = System.nanoTime();
            model.close();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
            assertThatThrownBy(first::join).cause().isInstanceOf(ModelTimeoutException.class);
            assertThatThrownBy(second::join).cause().isInstanceOfAny(ModelTimeoutException.class, IllegalStateException.class);
        } finally {
            release();
        }
    }

    @Test
    void closeIsIdempotentFromAnyThreadAtOnceEvenFromTheModelsOwnThread() throws Exception {
        PythonModel model = latched(PythonModel.builder());
        release();
        try (Tensor x = Tensor.of(new float[] {1}, 1)) {
            CompletableFuture<Void> closedByCallback = model.submit(Map.of("x", x))
                    .thenAccept(out -> {
                        out.values().forEach(Tensor::close);
                        model.close();   // runs on the model's own thread
                    });
            closedByCallback.get();
            Thread virtual = Thread.ofVirtual().start(model::close);
            Thread platform = Thread.ofPlatform().start(model::close);
            model.close();
            virtual.join();
            platform.join();
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void closeUnderLoadAnswersOrRefusesEveryCallerAndFreesWhatTheModelHeld() throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        PythonModel model = PythonModel.builder().python(Models.PY).name("doubler")
                .source("import numpy as np\ndef make():\n    return lambda x: np.from_dlpack(x) * 2\n", "make")
                .input("x", DataType.FLOAT64, -1, 4).batching(16, Duration.ofMillis(1)).workers(2).build();
        AtomicInteger answered = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> calls = new ArrayList<>();
            for (int i = 0; i < 2_000; i++) {
                double v = i;
                calls.add(threads.submit(() -> {
                    try (Tensor x = Tensor.of(new double[] {v, v, v, v}, 1, 4)) {
                        try (Tensor y = model.predict(x)) {
                            assertThat(y.toDoubleArray()).containsOnly(2 * v);
                            answered.incrementAndGet();
                        }
                    } catch (IllegalStateException | ModelOverloadedException closedOrFull) {
                        refused.incrementAndGet();
                    }
                }));
                if (i == 1_000) {
                    threads.submit(model::close);
                }
            }
            for (Future<?> c : calls) {
                c.get();
            }
        }
        assertThat(answered.get() + refused.get()).isEqualTo(2_000);
        assertThat(answered.get()).isPositive();
        assertThat(model.stats().answered()).isEqualTo(answered.get());
        Models.assertReleasedSince(exports, bytes);
    }
}
