package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Back-pressure, deadlines and cancellation, with a model that holds its call until the test lets it go. */
class AdmissionTest {
    private final Tensor x = Tensor.of(new float[] {1, 2}, 2);

    @BeforeAll
    static void gate() {
        Models.pythonModule("gate", """
                import threading
                import numpy as np

                started = threading.Event()
                release = threading.Event()
                calls = []

                def make():
                    def run(x):
                        calls.append(1)
                        started.set()
                        release.wait(30)  # lets the GIL go while it waits
                        return np.from_dlpack(x)
                    return run

                def reset():
                    started.clear()
                    release.clear()
                    calls.clear()
                """);
    }

    @AfterEach
    void closeInput() {
        release();
        x.close();
    }

    private static PythonModel.Builder gated() {
        Models.PY.exec("import gate\ngate.reset()");
        return PythonModel.builder().python(Models.PY).name("gate").factory("gate", "make");
    }

    /** Waits until the model's first call holds the worker. */
    private static void awaitStarted() throws InterruptedException {
        Models.await("gate.started.is_set()");
    }

    private static void release() {
        Models.PY.exec("import gate\ngate.release.set()");
    }

    private static long calls() {
        try (PyObject n = Models.PY.eval("len(gate.calls)")) {
            return n.asLong();
        }
    }

    private CompletableFuture<Map<String, Tensor>> submit(PythonModel model) {
        return model.submit(Map.of("x", x));
    }

    @Test
    void aFullQueueRefusesACallAtOnceWithModelOverloadedExceptionFromPredictAndSubmit() throws Exception {
        try (PythonModel model = gated().maxQueue(2).build()) {
            CompletableFuture<Map<String, Tensor>> running = submit(model);
            awaitStarted();
            CompletableFuture<Map<String, Tensor>> second = submit(model);
            CompletableFuture<Map<String, Tensor>> third = submit(model);
            long start = System.nanoTime();
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(ModelOverloadedException.class)
                    .hasMessageContaining("2 requests wait");
            assertThatThrownBy(() -> submit(model)).as("submit throws it at once too")
                    .isInstanceOf(ModelOverloadedException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(500));
            release();
            for (CompletableFuture<Map<String, Tensor>> f : java.util.List.of(running, second, third)) {
                f.join().values().forEach(Tensor::close);
            }
            ModelStats s = model.stats();
            assertThat(s.requests()).isEqualTo(3);
            assertThat(s.answered()).isEqualTo(3);
            assertThat(s.rejected()).isEqualTo(2);
        }
    }

    @Test
    void aRequestWhoseDeadlinePassesWhileWaitingIsDroppedBeforeTheModelSeesIt() throws Exception {
        try (PythonModel model = gated().timeout(Duration.ofMillis(300)).build()) {
            CompletableFuture<Map<String, Tensor>> running = submit(model);
            awaitStarted();
            CompletableFuture<Map<String, Tensor>> waiting = submit(model);
            assertThatThrownBy(waiting::join).isInstanceOf(CompletionException.class)
                    .cause().isInstanceOf(ModelTimeoutException.class).hasMessageContaining("waited in the queue");
            release();
            assertThatThrownBy(running::join).cause().isInstanceOf(ModelTimeoutException.class);
            model.close();
            assertThat(calls()).as("the model ran the first request only").isEqualTo(1);
            assertThat(model.stats().timedOut()).isEqualTo(2);
        }
    }

    @Test
    void aRequestWhoseDeadlinePassesWhileItsCallRunsOnAModelThreadFailsAtTheDeadline() throws Exception {
        try (PythonModel model = gated().timeout(Duration.ofMillis(300)).build()) {
            long start = System.nanoTime();
            // from a virtual thread: a platform caller would run the call on its own thread (OwnThreadCallTest)
            Thread caller = Thread.ofVirtual().start(() -> assertThatThrownBy(() -> model.predict(x))
                    .isInstanceOf(ModelTimeoutException.class)
                    .hasMessageContaining("the deadline of 300.0 ms passed while its model call had run"));
            assertThat(caller.join(Duration.ofSeconds(10))).isTrue();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isBetween(Duration.ofMillis(300), Duration.ofSeconds(5));
            release();
            model.close();
            ModelStats s = model.stats();
            assertThat(s.timedOut()).isEqualTo(1);
            assertThat(s.answered()).as("the call finished, its outputs let go").isZero();
        }
    }

    @Test
    void aVirtualThreadWaitingForAModelTimesOutToo() throws Exception {
        try (PythonModel model = gated().timeout(Duration.ofMillis(200)).build()) {
            Thread t = Thread.ofVirtual().start(() ->
                    assertThatThrownBy(() -> model.predict(x)).isInstanceOf(ModelTimeoutException.class));
            t.join(Duration.ofSeconds(10));
            assertThat(t.isAlive()).isFalse();
        }
    }

    @Test
    void aCancelledSubmitDropsItsRequestIfItHasNotStarted() throws Exception {
        try (PythonModel model = gated().build()) {
            CompletableFuture<Map<String, Tensor>> running = submit(model);
            awaitStarted();
            CompletableFuture<Map<String, Tensor>> waiting = submit(model);
            assertThat(waiting.cancel(false)).isTrue();
            assertThat(running.cancel(false)).as("a cancel does not stop a call that has started").isTrue();
            release();
            model.close();
            assertThat(calls()).isEqualTo(1);
            ModelStats s = model.stats();
            assertThat(s.requests()).isEqualTo(2);
            assertThat(s.answered() + s.failed() + s.timedOut()).isZero();
        }
    }
}
