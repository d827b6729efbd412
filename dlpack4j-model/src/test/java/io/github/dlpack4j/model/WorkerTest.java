package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A model thread that whatever happens to a batch answers or fails each of its requests, and lives on. */
class WorkerTest {
    @BeforeAll
    static void module() {
        Models.pythonModule("worker_gate", """
                import threading
                import numpy as np

                started, release = threading.Event(), threading.Event()
                calls = []  # the rows of each model call

                def make(mode):
                    def run(x):
                        a = np.from_dlpack(x)
                        calls.append(a.shape[0])
                        if mode == "hold-first" and len(calls) == 1:
                            started.set()
                            release.wait(30)  # lets the GIL go
                        if (a < 0).any():
                            raise ValueError("a negative row")
                        return a * 2
                    return run

                def reset():
                    started.clear(); release.clear(); calls.clear()
                """);
    }

    @AfterEach
    void release() {
        Models.PY.exec("import worker_gate\nworker_gate.release.set()");
    }

    private static PythonModel.Builder model(String mode) {
        Models.PY.exec("import worker_gate\nworker_gate.reset()");
        return PythonModel.builder().python(Models.PY).name(mode).factory("worker_gate", "make", mode);
    }

    private static List<Object> calls() {
        try (PyObject r = Models.PY.eval("worker_gate.calls")) {
            @SuppressWarnings("unchecked")
            List<Object> values = (List<Object>) r.toJava();
            return values;
        }
    }

    @Test
    void aBatchThatThrowsOutsideTheModelCallFailsItsRequestsAndTheModelThreadAnswersLaterCalls() throws Exception {
        // A batch buffer of 2^30 rows of 4 MiB cannot be allocated: stacking throws on the model's thread.
        try (PythonModel model = model("double").batching(1 << 30, Duration.ofMillis(500)).build();
             Tensor a = Tensor.zeros(DataType.FLOAT32, 1, 1 << 20);
             Tensor b = Tensor.zeros(DataType.FLOAT32, 1, 1 << 20)) {
            CompletableFuture<Map<String, Tensor>> fa = model.submit(Map.of("x", a));
            CompletableFuture<Map<String, Tensor>> fb = model.submit(Map.of("x", b));
            for (CompletableFuture<Map<String, Tensor>> f : List.of(fa, fb)) {
                assertThatThrownBy(() -> f.get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(Throwable.class);
            }
            try (Tensor c = Tensor.of(new float[] {1, 2}, 1, 2);
                 Tensor y = model.predict(c)) {
                assertThat(y.toFloatArray()).containsExactly(2, 4);
            }
            ModelStats s = model.stats();
            assertThat(s.failed()).isEqualTo(2);
            assertThat(s.answered()).isEqualTo(1);
        }
    }

    @Test
    void aBatchedRequestCancelledWhileItsBatchIsStackedWhoseCallerClosesItsInputLeavesTheOthersAnswered() throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        int n = 4_000_000;
        try (PythonModel model = model("double").batching(2, Duration.ofSeconds(1)).build();
             Tensor wide = Tensor.zeros(DataType.FLOAT32, 1, 2L * n)) {
            Tensor a = wide.slice(1, 0, 2L * n, 2); // [1, n], not contiguous: stacking copies it element by element
            Tensor b = Tensor.zeros(DataType.FLOAT32, 1, n);
            CompletableFuture<Map<String, Tensor>> fa = model.submit(Map.of("x", a));
            CompletableFuture<Map<String, Tensor>> fb = model.submit(Map.of("x", b)); // the batch is full: it runs
            Thread.sleep(20); // the model's thread is copying a's rows
            fb.cancel(false);
            b.close(); // its caller is done with b: its call was cancelled
            Map<String, Tensor> answer = fa.get(10, TimeUnit.SECONDS);
            try (Tensor y = answer.get("output")) {
                assertThat(y.shape()).containsExactly(1, n);
            }
            try (Tensor c = Tensor.of(new float[] {1, 2}, 1, 2);
                 Tensor y = model.predict(c)) {
                assertThat(y.toFloatArray()).containsExactly(2, 4);
            }
        }
        Models.assertReleasedSince(exports, bytes);
    }

    @Test
    void batchingRefusesSubByteDtypesAtBuildAndAtAdmission() {
        assertThatThrownBy(() -> model("double").input("x", DataType.FLOAT4_E2M1FN, -1, 3)
                .batching(4, Duration.ofMillis(1)).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("input x is " + DataType.FLOAT4_E2M1FN)
                .hasMessageContaining("sub-byte dtype")
                .hasMessageContaining("without batching");
        assertThatThrownBy(() -> model("double").output("y", DataType.FLOAT6_E2M3FN, -1, 3)
                .batching(4, Duration.ofMillis(1)).build())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("output y is");
        try (PythonModel model = model("double").batching(4, Duration.ofMillis(300)).build();
             Tensor a = Tensor.zeros(DataType.FLOAT4_E2M1FN, 1, 3)) {
            assertThatThrownBy(() -> model.submit(Map.of("x", a)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("input x is")
                    .hasMessageContaining("sub-byte dtype");
            assertThat(model.stats().requests()).isZero();
        }
    }

    @Test
    void aFailedBatchsRerunSkipsRequestsSettledMeanwhileAndRecordsNoSecondQueueWait() throws Exception {
        List<Tensor> inputs = new ArrayList<>();
        try (PythonModel model = model("hold-first").batching(3, Duration.ofSeconds(2)).build()) {
            List<CompletableFuture<Map<String, Tensor>>> futures = new ArrayList<>();
            for (float v : new float[] {0, -1, 2}) {
                Tensor x = Tensor.of(new float[] {v, v}, 1, 2);
                inputs.add(x);
                futures.add(model.submit(Map.of("x", x)));
            }
            Models.await("worker_gate.started.is_set()"); // the batch of 3 rows runs
            assertThat(futures.getFirst().cancel(false)).isTrue();
            Thread.sleep(500); // the reruns' queue waits would be over 500 ms
            release(); // the batch raises: its requests run again one by one
            assertThatThrownBy(futures.get(1)::join).isInstanceOf(CompletionException.class)
                    .cause().isInstanceOf(PythonException.class).hasMessageContaining("a negative row");
            try (Tensor y = futures.get(2).join().get("output")) {
                assertThat(y.toFloatArray()).containsExactly(4, 4);
            }
            assertThat(calls()).as("the batch, then the two requests still unsettled").containsExactly(3L, 1L, 1L);
            ModelStats s = model.stats();
            assertThat(s.batches()).isEqualTo(3);
            assertThat(s.queueWaitP99()).as("each request's wait recorded once, before the batch").isLessThan(Duration.ofMillis(400));
        } finally {
            inputs.forEach(Tensor::close);
        }
    }
}
