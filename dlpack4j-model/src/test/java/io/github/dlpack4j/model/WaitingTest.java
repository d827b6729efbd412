package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Where and how a caller waits: deadlines, a GIL scope, the model's own thread, interrupts, a future completed from outside. */
class WaitingTest {
    private final Tensor x = Tensor.of(new float[] {1, 2}, 2);

    @BeforeAll
    static void module() {
        Models.pythonModule("wait_gate", """
                import threading, weakref
                import numpy as np

                started, release = threading.Event(), threading.Event()
                live = [0]  # outputs not yet let go
                done = [0]  # model calls finished

                def _let_go():
                    live[0] -= 1

                def make(hold):
                    def run(x):
                        if hold:
                            started.set()
                            release.wait(30)  # lets the GIL go
                        y = np.from_dlpack(x) * 2
                        live[0] += 1
                        weakref.finalize(y, _let_go)
                        done[0] += 1
                        return y
                    return run

                def reset():
                    started.clear(); release.clear(); live[0] = 0; done[0] = 0
                """);
    }

    @AfterEach
    void releaseAndClose() {
        release();
        x.close();
    }

    private static void release() {
        Models.PY.exec("import wait_gate\nwait_gate.release.set()");
    }

    private static PythonModel.Builder model(String name, boolean hold) {
        Models.PY.exec("import wait_gate\nwait_gate.reset()");
        return PythonModel.builder().python(Models.PY).name(name).factory("wait_gate", "make", hold);
    }

    private static long live() {
        try (PyObject o = Models.PY.eval("__import__('gc').collect() * 0 + wait_gate.live[0]")) {
            return o.asLong();
        }
    }

    @Test
    void aCallbackThatBlocksAtADeadlineHoldsUpNoOtherDeadline() throws Exception {
        try (PythonModel model = model("deadlines", true).timeout(Duration.ofMillis(200)).build()) {
            CompletableFuture<Map<String, Tensor>> first = model.submit(Map.of("x", x));
            Models.await("wait_gate.started.is_set()");
            CountDown blocked = new CountDown();
            CompletableFuture<String> retried = first.handle((v, e) -> {
                blocked.await(); // a callback that blocks, on the thread that timed the call out
                return Thread.currentThread().getName();
            });
            Thread.sleep(300); // first timed out; its callback blocks
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> model.predict(Map.of("x", x))).isInstanceOf(ModelTimeoutException.class);
            CompletableFuture<Map<String, Tensor>> other = model.submit(Map.of("x", x));
            assertThatThrownBy(() -> other.get(5, TimeUnit.SECONDS)).hasCauseInstanceOf(ModelTimeoutException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofMillis(1500));
            blocked.open();
            assertThat(retried.get(5, TimeUnit.SECONDS)).isEqualTo("dlpack4j-model-deadline");
        }
    }

    /** A latch for a callback, opened by the test. */
    private static final class CountDown {
        private final CompletableFuture<Void> open = new CompletableFuture<>();

        void await() {
            open.join();
        }

        void open() {
            open.complete(null);
        }
    }

    @Test
    void predictInsideAGilScopeLetsTheGilGoWhileItWaits() {
        // batching: the call goes to the model's thread (a platform caller of a model without it runs its own call)
        try (PythonModel model = model("gil", false).batching(2, Duration.ZERO).timeout(Duration.ofSeconds(5)).build()) {
            float[] answer = Models.PY.withGil(() -> {
                try (Tensor y = model.predict(Map.of("x", x)).get("output")) {
                    return y.toFloatArray();
                }
            });
            assertThat(answer).containsExactly(2, 4);
        }
    }

    @Test
    void predictOnTheModelsOwnThreadThrowsIllegalStateException() throws Exception {
        try (PythonModel model = model("selfcall", true).build()) {
            CompletableFuture<Map<String, Tensor>> first = model.submit(Map.of("x", x));
            Models.await("wait_gate.started.is_set()"); // the callback runs on the model's thread
            CompletableFuture<Throwable> then = first.handle((out, e) -> {
                out.values().forEach(Tensor::close);
                try {
                    model.predict(Map.of("x", x)).values().forEach(Tensor::close);
                    return null;
                } catch (RuntimeException r) {
                    return r;
                }
            });
            release();
            assertThat(then.get(10, TimeUnit.SECONDS)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("model's own thread dlpack4j-model-selfcall-0")
                    .hasMessageContaining("Async");
        }
    }

    @Test
    void closeFromACallbackOnTheModelsOwnThreadAnswersTheCallsStillQueued() throws Exception {
        PythonModel model = model("closecallback", true).build();
        CompletableFuture<Map<String, Tensor>> first = model.submit(Map.of("x", x));
        Models.await("wait_gate.started.is_set()");
        CompletableFuture<Map<String, Tensor>> queued = model.submit(Map.of("x", x));
        CompletableFuture<Void> closed = first.thenAccept(out -> {
            out.values().forEach(Tensor::close);
            model.close();
        });
        release();
        closed.get(10, TimeUnit.SECONDS);
        try (Tensor y = queued.get(10, TimeUnit.SECONDS).get("output")) {
            assertThat(y.toFloatArray()).containsExactly(2, 4);
        }
        assertThatThrownBy(() -> model.submit(Map.of("x", x))).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void orTimeoutOnTheFutureSettlesTheRequestAndItsLateAnswerIsLetGo() throws Exception {
        try (PythonModel model = model("ortimeout", true).build()) {
            CompletableFuture<Map<String, Tensor>> f = model.submit(Map.of("x", x)).orTimeout(50, TimeUnit.MILLISECONDS);
            Models.await("wait_gate.started.is_set()");
            assertThatThrownBy(() -> f.get(5, TimeUnit.SECONDS)).hasCauseInstanceOf(TimeoutException.class);
            CompletableFuture<Map<String, Tensor>> done = model.submit(Map.of("x", x));
            assertThat(done.complete(Map.of())).as("complete from outside").isTrue();
            release();
            Models.await("wait_gate.done[0] == 1");
            model.close(); // the model's thread is done with both
            ModelStats s = model.stats();
            assertThat(s.requests()).isEqualTo(2);
            assertThat(s.answered() + s.failed() + s.timedOut()).as("counted in requests only, as cancelled").isZero();
            assertThat(live()).as("the late answer let go without a GC").isZero();
        }
    }

    @Test
    void anInterruptRacingTheAnswerReturnsItWithTheInterruptStatusSet() throws Exception {
        int answered = 0;
        try (PythonModel model = model("interrupt", false).build()) {
            Random random = new Random(1);
            long end = System.nanoTime() + 2_000_000_000L;
            while (System.nanoTime() < end) {
                AtomicReference<String> outcome = new AtomicReference<>();
                AtomicBoolean flagSet = new AtomicBoolean();
                Thread t = Thread.ofPlatform().start(() -> {
                    try {
                        model.predict(Map.of("x", x)).values().forEach(Tensor::close);
                        outcome.set("answered");
                    } catch (CancellationException e) {
                        outcome.set("cancelled");
                    }
                    flagSet.set(Thread.currentThread().isInterrupted());
                });
                long spin = System.nanoTime() + random.nextInt(400_000);
                while (System.nanoTime() < spin) {
                    Thread.onSpinWait();
                }
                t.interrupt();
                t.join();
                assertThat(outcome.get()).isIn("answered", "cancelled");
                if (outcome.get().equals("cancelled")) {
                    assertThat(flagSet).isTrue();
                } else {
                    answered++;
                }
            }
            model.close();
            assertThat(model.stats().answered()).as("every answer counted reached its caller").isEqualTo(answered);
            assertThat(live()).as("no answer left to the cleaner").isZero();
        }
    }
}
