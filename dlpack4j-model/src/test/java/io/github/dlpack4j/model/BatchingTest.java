package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.CompletionException;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonException;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class BatchingTest {
    @BeforeAll
    static void probe() {
        Models.pythonModule("batch_probe", """
                import weakref
                import torch

                calls = []    # (rows, address of the input) of each model call
                outputs = []  # weak references to each call's output

                def make(mode):
                    def run(x):
                        x = torch.from_dlpack(x)
                        calls.append((x.shape[0], x.data_ptr()))
                        if mode == "poison" and bool((x < 0).any()):
                            raise ValueError("a negative row")
                        y = x if mode == "identity" else x * 2
                        outputs.append(weakref.ref(y))
                        return y
                    return run

                def reset():
                    calls.clear()
                    outputs.clear()

                def rows():
                    return [c[0] for c in calls]

                def addresses():
                    return [c[1] for c in calls]

                def alive():
                    return [r() is not None for r in outputs]
                """);
    }

    private static PythonModel model(String mode, int maxRows, Duration delay) {
        PythonModel model = PythonModel.builder().python(Models.PY).name(mode).factory("batch_probe", "make", mode)
                .input("x", DataType.FLOAT32, -1, 2).batching(maxRows, delay).build();
        Models.PY.exec("import batch_probe\nbatch_probe.reset()"); // forgets the warm-up
        return model;
    }

    private static List<Object> probe(String function) {
        try (PyObject r = Models.PY.eval("batch_probe." + function + "()")) {
            @SuppressWarnings("unchecked")
            List<Object> values = (List<Object>) r.toJava();
            return values;
        }
    }

    /** Submits one request per value, each of one row {@code [v, v]}, without waiting. */
    private static List<CompletableFuture<Map<String, Tensor>>> submitRows(PythonModel model, List<Tensor> keep, float... values) {
        List<CompletableFuture<Map<String, Tensor>>> futures = new ArrayList<>();
        for (float v : values) {
            Tensor x = Tensor.of(new float[] {v, v}, 1, 2);
            keep.add(x);
            futures.add(model.submit(Map.of("x", x)));
        }
        return futures;
    }

    @Test
    void requestsArrivingTogetherAreStackedUpToMaxBatchRowsAndEachGetsItsOwnRows() {
        List<Tensor> inputs = new ArrayList<>();
        try (PythonModel model = model("double", 4, Duration.ofMillis(300))) {
            List<CompletableFuture<Map<String, Tensor>>> futures = submitRows(model, inputs, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
            for (int i = 0; i < futures.size(); i++) {
                try (Tensor y = futures.get(i).join().get("output")) {
                    assertThat(y.shape()).containsExactly(1, 2);
                    assertThat(y.toFloatArray()).containsExactly(2f * i, 2f * i);
                }
            }
            assertThat(probe("rows")).containsExactly(4L, 4L, 2L);
            ModelStats s = model.stats();
            assertThat(s.batches()).isEqualTo(3);
            assertThat(s.largestBatchRows()).isEqualTo(4);
            assertThat(s.requests()).isEqualTo(10);
            assertThat(s.answered()).isEqualTo(10);
        } finally {
            inputs.forEach(Tensor::close);
        }
    }

    @Test
    void aBatchThatIsNotFullRunsOnceMaxDelayHasPassedSinceItsFirstRequest() {
        try (PythonModel model = model("double", 64, Duration.ofMillis(200));
             Tensor x = Tensor.of(new float[] {1, 2}, 1, 2)) {
            long start = System.nanoTime();
            model.predict(x).close();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(200));
            assertThat(model.stats().queueWaitP50()).isGreaterThanOrEqualTo(Duration.ofMillis(200));
        }
    }

    @Test
    void aBatchFilledByRequestsArrivingOneByOneRunsOnceFullWithoutWaitingOutItsDelay() throws Exception {
        List<Tensor> inputs = new ArrayList<>();
        try (PythonModel model = model("double", 6, Duration.ofSeconds(10))) {
            long start = System.nanoTime();
            List<CompletableFuture<Map<String, Tensor>>> futures = new ArrayList<>();
            for (int i = 0; i < 3; i++) { // two rows each, apart: the batch gathers between them
                Tensor x = Tensor.of(new float[] {i, i, i, i}, 2, 2);
                inputs.add(x);
                futures.add(model.submit(Map.of("x", x)));
                Thread.sleep(50);
            }
            for (int i = 0; i < futures.size(); i++) {
                try (Tensor y = futures.get(i).get(5, TimeUnit.SECONDS).get("output")) {
                    assertThat(y.toFloatArray()).containsOnly(2f * i);
                }
            }
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
            assertThat(probe("rows")).containsExactly(6L);
        } finally {
            inputs.forEach(Tensor::close);
        }
    }

    @Test
    void anAnnouncedCallAloneDoesNotWaitOutTheDelay() {
        try (PythonModel model = model("double", 64, Duration.ofSeconds(5));
             Tensor x = Tensor.of(new float[] {1, 2}, 1, 2)) {
            long start = System.nanoTime();
            try (PythonModel.Announcement coming = model.announce(); Tensor y = model.predict(x)) {
                assertThat(y.toFloatArray()).containsExactly(2, 4);
            }
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
        }
    }

    @Test
    void aBatchWaitsForEveryAnnouncedCallWithinItsDelayThenRunsAtOnce() throws Exception {
        List<Tensor> inputs = new ArrayList<>();
        try (PythonModel model = model("double", 64, Duration.ofSeconds(10))) {
            List<PythonModel.Announcement> coming = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                coming.add(model.announce());
            }
            List<CompletableFuture<Map<String, Tensor>>> first = submitRows(model, inputs, 1, 2);
            Thread.sleep(300); // two of three announced calls came: the batch waits for the third
            assertThat(first).noneMatch(CompletableFuture::isDone);
            long start = System.nanoTime();
            List<CompletableFuture<Map<String, Tensor>>> third = submitRows(model, inputs, 3);
            third.getFirst().get(5, TimeUnit.SECONDS).get("output").close();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
            first.forEach(f -> f.join().get("output").close());
            assertThat(probe("rows")).containsExactly(3L);
            coming.forEach(PythonModel.Announcement::close);
        } finally {
            inputs.forEach(Tensor::close);
        }
    }

    @Test
    void closingAnAnnouncementThatWillNotCallLetsTheBatchRun() throws Exception {
        List<Tensor> inputs = new ArrayList<>();
        try (PythonModel model = model("double", 64, Duration.ofSeconds(10))) {
            PythonModel.Announcement answered = model.announce();
            PythonModel.Announcement badRequest = model.announce();
            CompletableFuture<Map<String, Tensor>> f = submitRows(model, inputs, 1).getFirst();
            Thread.sleep(300);
            assertThat(f).isNotDone();
            badRequest.close();
            badRequest.close(); // idempotent: it counts once
            f.get(5, TimeUnit.SECONDS).get("output").close();
            answered.close();
            assertThat(probe("rows")).containsExactly(1L);
        } finally {
            inputs.forEach(Tensor::close);
        }
    }

    @Test
    void withAZeroDelayABatchRunsAtOnceWithWhatWaits() {
        try (PythonModel model = model("double", 64, Duration.ZERO);
             Tensor x = Tensor.of(new float[] {1, 2}, 1, 2)) {
            model.predict(x).close();
            assertThat(model.stats().queueWaitP50()).isLessThan(Duration.ofSeconds(1));
        }
    }

    @Test
    void aRequestWithMoreRowsThanMaxBatchRowsRunsAlone() {
        List<Tensor> inputs = new ArrayList<>();
        try (PythonModel model = model("double", 4, Duration.ofMillis(200));
             Tensor big = Tensor.of(new float[12], 6, 2)) {
            CompletableFuture<Map<String, Tensor>> large = model.submit(Map.of("x", big));
            List<CompletableFuture<Map<String, Tensor>>> small = submitRows(model, inputs, 1, 2);
            large.join().get("output").close();
            small.forEach(f -> f.join().get("output").close());
            assertThat(probe("rows")).containsExactly(6L, 2L);
        } finally {
            inputs.forEach(Tensor::close);
        }
    }

    @Test
    void stackedRequestsAreCopiedIntoOneBufferThatTheRuntimeReuses() {
        List<Tensor> inputs = new ArrayList<>();
        try (PythonModel model = model("double", 2, Duration.ofMillis(300))) {
            submitRows(model, inputs, 1, 2, 3, 4).forEach(f -> f.join().get("output").close());
            List<Object> addresses = probe("addresses");
            assertThat(addresses).hasSize(2);
            assertThat(addresses.get(1)).isEqualTo(addresses.get(0));
            assertThat(inputs.stream().map(Tensor::dataPointer)).doesNotContain((Long) addresses.get(0));
        } finally {
            inputs.forEach(Tensor::close);
        }
    }

    @Test
    void theBatchsOutputIsReleasedWhenTheLastRequestClosesItsRows() {
        List<Tensor> inputs = new ArrayList<>();
        try (PythonModel model = model("double", 2, Duration.ofMillis(300))) {
            List<CompletableFuture<Map<String, Tensor>>> futures = submitRows(model, inputs, 1, 2);
            Tensor first = futures.get(0).join().get("output");
            Tensor second = futures.get(1).join().get("output");
            first.close();
            assertThat(probe("alive")).containsExactly(true);
            assertThat(second.toFloatArray()).containsExactly(4, 4);
            second.close();
            // The model's deleter runs with the GIL, once a thread takes it (the probe's call does).
            long until = System.nanoTime() + 2_000_000_000L;
            while (probe("alive").equals(List.of(true)) && System.nanoTime() < until) {
                Thread.onSpinWait();
            }
            assertThat(probe("alive")).containsExactly(false);
        } finally {
            inputs.forEach(Tensor::close);
        }
    }

    @Test
    void aModelThatReturnsItsBatchBufferLeavesEachAnswerIntactAcrossLaterBatches() {
        List<Tensor> inputs = new ArrayList<>();
        try (PythonModel model = model("identity", 2, Duration.ofMillis(300))) {
            List<Tensor> firstBatch = submitRows(model, inputs, 1, 2).stream().map(f -> f.join().get("output")).toList();
            submitRows(model, inputs, 7, 8).forEach(f -> f.join().get("output").close());
            assertThat(firstBatch.get(0).toFloatArray()).containsExactly(1, 1);
            assertThat(firstBatch.get(1).toFloatArray()).containsExactly(2, 2);
            firstBatch.forEach(Tensor::close);
        } finally {
            inputs.forEach(Tensor::close);
        }
    }

    @Test
    void aPoisonedRequestFailsAloneAndItsBatchIsAnswered() {
        List<Tensor> inputs = new ArrayList<>();
        float[] values = new float[32];
        for (int i = 0; i < values.length; i++) {
            values[i] = i == 13 ? -1 : i;
        }
        try (PythonModel model = model("poison", 32, Duration.ofSeconds(2))) {
            List<CompletableFuture<Map<String, Tensor>>> futures = submitRows(model, inputs, values);
            for (int i = 0; i < futures.size(); i++) {
                CompletableFuture<Map<String, Tensor>> f = futures.get(i);
                if (i == 13) {
                    assertThatThrownBy(f::join).isInstanceOf(CompletionException.class)
                            .cause().isInstanceOf(PythonException.class).hasMessageContaining("a negative row");
                } else {
                    try (Tensor y = f.join().get("output")) {
                        assertThat(y.toFloatArray()).containsExactly(2f * i, 2f * i);
                    }
                }
            }
            ModelStats s = model.stats();
            assertThat(s.requests()).isEqualTo(32);
            assertThat(s.answered()).isEqualTo(31);
            assertThat(s.failed()).isEqualTo(1);
            assertThat(s.batches()).as("the batch, then its 32 requests one by one").isEqualTo(33);
            assertThat(probe("rows")).startsWith(32L).hasSize(33);
        } finally {
            inputs.forEach(Tensor::close);
        }
    }
}
