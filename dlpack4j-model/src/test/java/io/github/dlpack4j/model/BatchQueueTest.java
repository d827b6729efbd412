package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** What joins a batch (not a request past its deadline, nor a cancelled one, nor one of other trailing shapes), and what a batch's answers outlive. */
class BatchQueueTest {
    private final List<Tensor> inputs = new ArrayList<>();

    @BeforeAll
    static void probe() {
        Models.pythonModule("queue_probe", """
                import numpy as np
                import torch

                calls = []  # the rows each model call saw


                def make(mode):
                    def run(x):
                        a = np.from_dlpack(x)
                        calls.append(a.tolist())
                        return torch.from_dlpack(x) if mode == "identity" else a * 2
                    return run


                def reset():
                    calls.clear()
                """);
    }

    @AfterEach
    void closeInputs() {
        inputs.forEach(Tensor::close);
    }

    private static PythonModel.Builder model(String mode, long... shape) {
        return PythonModel.builder().python(Models.PY).name(mode).factory("queue_probe", "make", mode)
                .input("x", DataType.FLOAT32, shape);
    }

    /** The rows each model call saw since {@link #reset()}. */
    private static List<Object> calls() {
        try (PyObject r = Models.PY.eval("queue_probe.calls")) {
            @SuppressWarnings("unchecked")
            List<Object> values = (List<Object>) r.toJava();
            return values;
        }
    }

    /** Forgets the warm-up's call. */
    private static void reset() {
        Models.PY.exec("import queue_probe\nqueue_probe.reset()");
    }

    private CompletableFuture<Map<String, Tensor>> submit(PythonModel model, float... row) {
        Tensor x = Tensor.of(row, 1, row.length);
        inputs.add(x);
        return model.submit(Map.of("x", x));
    }

    private static float[] answer(CompletableFuture<Map<String, Tensor>> f) {
        try (Tensor y = f.join().get("output")) {
            return y.toFloatArray();
        }
    }

    /** A model whose batches gather for 2 s, with a request that is settled (cancelled or past its deadline) while its batch gathers. */
    private PythonModel withASettledRequest(String how) throws InterruptedException {
        PythonModel.Builder b = model("double", -1, 1).batching(2, Duration.ofSeconds(2));
        PythonModel model = (how.equals("deadline") ? b.timeout(Duration.ofMillis(200)) : b).build();
        reset();
        CompletableFuture<Map<String, Tensor>> settled = submit(model, -1);
        if (how.equals("deadline")) {
            assertThatThrownBy(settled::join).isInstanceOf(CompletionException.class)
                    .cause().isInstanceOf(ModelTimeoutException.class).hasMessageContaining("waited in the queue");
        } else {
            Thread.sleep(100); // the model's thread has taken it, and gathers its batch
            assertThat(settled.cancel(false)).isTrue();
        }
        return model;
    }

    @ParameterizedTest
    @ValueSource(strings = {"cancel", "deadline"})
    void aRequestSettledWhileItsBatchGathersNeverReachesTheModel(String how) throws InterruptedException {
        PythonModel model = withASettledRequest(how);
        model.close();
        assertThat(calls()).isEmpty();
        ModelStats s = model.stats();
        assertThat(s.batches()).isZero();
        assertThat(s.timedOut()).isEqualTo(how.equals("deadline") ? 1 : 0);
    }

    @ParameterizedTest
    @ValueSource(strings = {"cancel", "deadline"})
    void aRequestSettledWhileItsBatchGathersLeavesItsRowsToTheRequestsBehindIt(String how) throws InterruptedException {
        try (PythonModel model = withASettledRequest(how)) {
            long start = System.nanoTime();
            CompletableFuture<Map<String, Tensor>> first = submit(model, 1);
            CompletableFuture<Map<String, Tensor>> second = submit(model, 2);
            assertThat(answer(first)).containsExactly(2);
            assertThat(answer(second)).containsExactly(4);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).as("a full batch runs at once").isLessThan(Duration.ofSeconds(1));
            assertThat(calls()).as("one full batch of the two requests").containsExactly(List.of(List.of(1.0), List.of(2.0)));
        }
    }

    @Test
    void requestsOfOtherTrailingShapesAreNotStackedTogether() {
        try (PythonModel model = model("double", -1, -1).batching(4, Duration.ofMillis(300)).build()) {
            reset();
            List<CompletableFuture<Map<String, Tensor>>> answers = List.of(
                    submit(model, 1, 1), submit(model, 2, 2, 2), submit(model, 3, 3), submit(model, 4, 4, 4));
            assertThat(answer(answers.get(0))).containsExactly(2, 2);
            assertThat(answer(answers.get(1))).containsExactly(4, 4, 4);
            assertThat(answer(answers.get(2))).containsExactly(6, 6);
            assertThat(answer(answers.get(3))).containsExactly(8, 8, 8);
            assertThat(calls()).as("a batch per trailing shape").containsExactlyInAnyOrder(
                    List.of(List.of(1.0, 1.0), List.of(3.0, 3.0)),
                    List.of(List.of(2.0, 2.0, 2.0), List.of(4.0, 4.0, 4.0)));
        }
    }

    @Test
    void aBatchsAnswersStayReadableAfterTheModelIsClosedEvenWhenTheModelReturnedItsBatchBuffer() {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        for (String mode : List.of("double", "identity")) {
            List<Map<String, Tensor>> answers;
            try (PythonModel model = model(mode, -1, 2).batching(3, Duration.ofSeconds(2)).build()) {
                List<CompletableFuture<Map<String, Tensor>>> futures = List.of(submit(model, 1, 2), submit(model, 3, 4), submit(model, 5, 6));
                answers = futures.stream().map(CompletableFuture::join).toList();
                assertThat(model.stats().largestBatchRows()).isEqualTo(3);
            }
            float k = mode.equals("double") ? 2 : 1;
            for (int i = 0; i < answers.size(); i++) {
                try (Tensor y = answers.get(i).get("output")) {
                    assertThat(y.toFloatArray()).as(mode + ", request " + i).containsExactly(k * (2 * i + 1), k * (2 * i + 2));
                }
            }
        }
        inputs.forEach(Tensor::close);
        inputs.clear();
        Models.assertReleasedSince(exports, bytes);
    }
}
