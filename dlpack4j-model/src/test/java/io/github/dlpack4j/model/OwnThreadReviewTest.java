package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review experiments on a platform caller's own call (callHere) with a deadline, and on a call made
 * re-entrantly from inside its own call (model -> Java callback -> predict on the same model).
 */
class OwnThreadReviewTest {
    @BeforeAll
    static void module() {
        Models.pythonModule("own_review", """
                import threading
                import time
                import weakref
                import numpy as np

                # by model: its calls running now, the most at once, the threads in it now and the most
                # threads in it at once (a re-entrant call is a second call on the same thread)
                state = {}
                lock = threading.Lock()
                fns = {}       # by model: the Java callback of make_back
                outs = []      # weak references to the arrays the models returned

                def _new(name):
                    state[name] = {"active": 0, "most": 0, "calls": 0, "threads": {}, "most_threads": 0,
                                   "idents": set()}
                    return state[name]

                def _enter(mine):
                    t = threading.get_ident()
                    with lock:
                        mine["active"] += 1
                        mine["calls"] += 1
                        mine["most"] = max(mine["most"], mine["active"])
                        mine["threads"][t] = mine["threads"].get(t, 0) + 1
                        mine["most_threads"] = max(mine["most_threads"], len(mine["threads"]))
                        mine["idents"].add(t)

                def _exit(mine):
                    t = threading.get_ident()
                    with lock:
                        mine["active"] -= 1
                        mine["threads"][t] -= 1
                        if mine["threads"][t] == 0:
                            del mine["threads"][t]

                def _kept(a):
                    outs.append(weakref.ref(a))
                    return a

                def alive():
                    import gc
                    gc.collect()
                    n = sum(1 for r in outs if r() is not None)
                    outs[:] = [r for r in outs if r() is not None]
                    return n

                def make(name, seconds, mode):
                    mine = _new(name)
                    def run(x):
                        _enter(mine)
                        try:
                            a = np.from_dlpack(x)
                            if seconds == "mod7":
                                time.sleep((int(a[0]) % 7) / 1000)
                            elif seconds == "bimodal":  # one call in seven past a 15 ms deadline
                                time.sleep(0.03 if int(a[0]) % 7 == 6 else (int(a[0]) % 7) / 2000)
                            elif seconds:
                                time.sleep(seconds)
                            if mode == "identity":
                                return np.from_dlpack(x)
                            if mode == "torch-identity":
                                import torch
                                return torch.from_dlpack(x)
                            if mode == "two":
                                return {"y": _kept(a * 2), "z": _kept(a + 1)}
                            return _kept(a * 2)
                        finally:
                            _exit(mine)
                    return run

                def make_back(name, seconds):
                    mine = _new(name)
                    def run(x):
                        _enter(mine)
                        try:
                            a = np.from_dlpack(x)
                            if seconds:
                                time.sleep(seconds)
                            return _kept(np.asarray(fns[name](a.tolist()), dtype=np.float32))
                        finally:
                            _exit(mine)
                    return run
                """);
    }

    /** The Java side of a {@code make_back} model: its input's values to its output's values. */
    @FunctionalInterface
    interface Handler {
        float[] apply(float[] in) throws Exception;
    }

    private final List<String> callbacks = new ArrayList<>();

    @AfterEach
    void dropCallbacks() {
        for (String name : callbacks) {
            Models.PY.exec("import own_review\nown_review.fns.pop('" + name + "', None)");
        }
    }

    private static PythonModel.Builder model(String name, Object seconds, String mode) {
        return PythonModel.builder().python(Models.PY).name(name).factory("own_review", "make", name, seconds, mode);
    }

    /** A model whose call calls {@code handler} in Java (after sleeping {@code seconds} in Python). */
    private PythonModel.Builder back(String name, double seconds, Handler handler) {
        try (PyObject fn = Models.PY.function(args -> {
            try (PyObject a = args[0]) {
                List<?> list = (List<?>) a.toJava();
                float[] in = new float[list.size()];
                for (int i = 0; i < in.length; i++) {
                    in[i] = ((Number) list.get(i)).floatValue();
                }
                float[] out = handler.apply(in);
                List<Double> result = new ArrayList<>(out.length);
                for (float f : out) {
                    result.add((double) f);
                }
                return result;
            }
        })) {
            Models.PY.setGlobal("_own_review_fn", fn);
            Models.PY.exec("import own_review\nown_review.fns['" + name + "'] = _own_review_fn\ndel _own_review_fn");
        }
        callbacks.add(name);
        return PythonModel.builder().python(Models.PY).name(name).factory("own_review", "make_back", name, seconds);
    }

    private static long state(String name, String what) {
        return Models.pyLong("__import__('own_review').state['" + name + "']['" + what + "']");
    }

    /** The arrays the models returned that are still alive (after Python's collector ran), looked at for up to 5 s. */
    private static long aliveOutputs() throws InterruptedException {
        long n = 0;
        for (int i = 0; i < 500; i++) {
            n = Models.pyLong("__import__('own_review').alive()");
            if (n == 0) {
                return 0;
            }
            Thread.sleep(10);
        }
        return n;
    }

    /**
     * {@link Models#assertReleasedSince} after Java's collector ran: a {@link PythonException} keeps
     * its Python traceback (whose frames hold the model's inputs) until it is collected. Only where
     * such exceptions were thrown: the collector also runs the cleaners of leaked tensors, which
     * would hide a leaked share of an input.
     */
    private static void releasedAfterJavaGc(int exports, long bytes) throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(20);
        }
        Models.assertReleasedSince(exports, bytes);
    }

    private static float[] values(int caller, int call) {
        return Models.callValues(caller, call, 8);
    }

    private static void assertAddsUp(ModelStats s, long cancelled) {
        assertThat(s.requests()).as("requests == answered + failed + timedOut + cancelled: " + s)
                .isEqualTo(s.answered() + s.failed() + s.timedOut() + cancelled);
    }

    // ------------------------------------------------------------------ the deadline on the caller's thread

    @Test
    @Timeout(120)
    void aDeadlinePassingOnTheCallersThreadLetsGoOfEveryOutputAndKeepsTheCallersInputIntact() throws Exception {
        for (String mode : List.of("double", "two", "identity", "torch-identity")) {
            int exports = Dlpack.liveExports();
            long bytes = Dlpack.nativeBytesInUse();
            float[] v = values(1, 1);
            try (PythonModel model = model("late-" + mode, 0.03, mode).timeout(Duration.ofMillis(5)).build();
                 Tensor x = Tensor.of(v, 8)) {
                for (int i = 0; i < 20; i++) {
                    assertThatThrownBy(() -> model.predict(Map.of("input", x)))
                            .as(mode).isInstanceOf(ModelTimeoutException.class).hasMessageContaining("caller's thread");
                }
                // the input's own handle was let go exactly once a call: still open, still its values
                assertThat(x.isClosed()).isFalse();
                assertThat(x.toFloatArray()).as(mode).containsExactly(v);
                ModelStats s = model.stats();
                assertThat(s.requests()).isEqualTo(20);
                assertThat(s.timedOut()).isEqualTo(20);
                assertThat(s.answered()).isZero();
                assertThat(s.failed()).isZero();
                assertThat(s.batches()).isEqualTo(20);
                assertThat(s.queueWaitP99()).as("each ran on its caller's thread").isZero();
            }
            assertThat(aliveOutputs()).as(mode + ": the model's arrays still held").isZero();
            Models.assertReleasedSince(exports, bytes);
        }
    }

    @Test
    @Timeout(120)
    void callsNearTheDeadlineFromPlatformAndVirtualCallersEachGetTheirOwnAnswerOrTimeOutAndTheStatsAddUp()
            throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        AtomicInteger answered = new AtomicInteger();
        AtomicInteger timedOut = new AtomicInteger();
        AtomicInteger wrong = new AtomicInteger();
        ConcurrentLinkedQueue<Throwable> other = new ConcurrentLinkedQueue<>();
        String name = "near";
        AtomicInteger onCallersThread = new AtomicInteger();
        try (PythonModel model = model(name, "bimodal", "double").workers(3).timeout(Duration.ofMillis(15)).build()) {
            List<Thread> callers = new ArrayList<>();
            for (int c = 0; c < 3; c++) {
                int caller = c;
                Runnable body = () -> {
                    for (int i = 0; i < 100; i++) {
                        float[] v = values(caller, i);
                        try (Tensor x = Tensor.of(v, 8); Tensor y = model.predict(x)) {
                            if (!Arrays.equals(y.toFloatArray(), Models.doubled(v))) {
                                wrong.incrementAndGet();
                            }
                            answered.incrementAndGet();
                        } catch (ModelTimeoutException e) {
                            timedOut.incrementAndGet();
                            if (e.getMessage().contains("caller's thread")) {
                                onCallersThread.incrementAndGet();
                            }
                        } catch (Throwable t) {
                            other.add(t);
                        }
                    }
                };
                callers.add(caller < 2 ? Thread.ofPlatform().start(body) : Thread.ofVirtual().start(body));
            }
            for (Thread t : callers) {
                assertThat(t.join(Duration.ofSeconds(60))).isTrue();
            }
            assertThat(other).isEmpty();
            assertThat(wrong.get()).isZero();
            ModelStats s = model.stats();
            System.out.printf("near the deadline: answered %d timed out %d (%d of them on the caller's thread), stats %s%n",
                    answered.get(), timedOut.get(), onCallersThread.get(), s);
            assertThat(answered.get()).as("some answered").isPositive();
            assertThat(timedOut.get()).as("some timed out").isPositive();
            assertThat(s.answered()).isEqualTo(answered.get());
            assertThat(s.timedOut()).isEqualTo(timedOut.get());
            assertAddsUp(s, 0);
            assertThat(state(name, "most_threads")).as("threads in the model at once").isBetween(1L, 3L);
            assertThat(onCallersThread.get()).as("calls timed out on their callers' threads").isPositive();
        }
        assertThat(aliveOutputs()).isZero();
        Models.assertReleasedSince(exports, bytes);
    }

    @Test
    @Timeout(60)
    void anInterruptedCallerWhoseOwnCallRunsPastTheDeadlineTimesOutWithItsStatusAndLeaksNothing() throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        try (PythonModel model = model("late-interrupted", 0.03, "identity").timeout(Duration.ofMillis(5)).build()) {
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            boolean[] flag = new boolean[1];
            Thread t = Thread.ofPlatform().start(() -> {
                try (Tensor x = Tensor.of(values(2, 2), 8)) {
                    Thread.currentThread().interrupt();
                    try {
                        model.predict(x).close();
                    } catch (Throwable e) {
                        thrown.set(e);
                    }
                    flag[0] = Thread.interrupted();
                    assertThat(x.toFloatArray()).containsExactly(values(2, 2));
                }
            });
            assertThat(t.join(Duration.ofSeconds(30))).isTrue();
            assertThat(thrown.get()).isInstanceOf(ModelTimeoutException.class);
            assertThat(flag[0]).as("interrupt status kept").isTrue();
            assertThat(model.stats().timedOut()).isEqualTo(1);
            assertAddsUp(model.stats(), 0);
        }
        Models.assertReleasedSince(exports, bytes);
    }

    @Test
    @Timeout(60)
    void aQueuedCallerInterruptedWhileThePlatformCallerHoldsTheOnlySlotIsCancelledAndTheStatsAddUp() throws Exception {
        String name = "cancel-behind";
        try (PythonModel model = model(name, 1.0, "double").workers(1).timeout(Duration.ofSeconds(10)).build()) {
            Thread running = Thread.ofPlatform().start(() -> {
                try (Tensor x = Tensor.of(values(0, 0), 8); Tensor y = model.predict(x)) {
                    assertThat(y.toFloatArray()).containsExactly(Models.doubled(values(0, 0)));
                }
            });
            Models.await("__import__('own_review').state['" + name + "']['active'] == 1");
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            Thread queued = Thread.ofPlatform().start(() -> {
                try (Tensor x = Tensor.of(values(1, 0), 8)) {
                    model.predict(x).close();
                } catch (Throwable e) {
                    thrown.set(e);
                }
            });
            long until = System.nanoTime() + 5_000_000_000L;
            while (model.stats().requests() < 2 && System.nanoTime() < until) {
                Thread.sleep(1);
            }
            queued.interrupt();
            assertThat(queued.join(Duration.ofSeconds(5))).isTrue();
            assertThat(running.join(Duration.ofSeconds(5))).isTrue();
            assertThat(thrown.get()).isInstanceOf(CancellationException.class);
            ModelStats s = model.stats();
            assertThat(s.answered()).isEqualTo(1);
            assertAddsUp(s, 1);
            assertThat(state(name, "calls")).as("the cancelled call never ran").isEqualTo(1);
        }
    }

    // ------------------------------------------------------------------ output aliasing the input

    @Test
    @Timeout(120)
    void anOutputAliasingTheInputOnTheCallersThreadOutlivesTheCallersInputWithItsOwnValues() throws Exception {
        for (String mode : List.of("identity", "torch-identity")) {
            int exports = Dlpack.liveExports();
            long bytes = Dlpack.nativeBytesInUse();
            String name = "alias-" + mode;
            AtomicInteger wrong = new AtomicInteger();
            try (PythonModel model = model(name, 0, mode).workers(2).build()) {
                List<Thread> callers = new ArrayList<>();
                for (int c = 0; c < 4; c++) {
                    int caller = c;
                    callers.add(Thread.ofPlatform().start(() -> {
                        for (int i = 0; i < 200; i++) {
                            float[] v = values(caller, i);
                            Tensor y;
                            try (Tensor x = Tensor.of(v, 8)) {
                                y = model.predict(x);
                            }
                            try (y) { // the caller's tensor is closed: the output keeps its memory
                                if (!Arrays.equals(y.toFloatArray(), v)) {
                                    wrong.incrementAndGet();
                                }
                            }
                        }
                    }));
                }
                for (Thread t : callers) {
                    assertThat(t.join(Duration.ofSeconds(60))).isTrue();
                }
                assertThat(wrong.get()).as(mode).isZero();
                assertThat(model.stats().answered()).isEqualTo(800);
                assertThat(state(name, "most_threads")).isBetween(1L, 2L);
                // some of them ran on their callers' threads (not only the two model threads)
                assertThat(Models.pyLong("len(__import__('own_review').state['" + name + "']['idents'])")).isGreaterThan(2);
            }
            Models.assertReleasedSince(exports, bytes);
        }
    }

    // ------------------------------------------------------------------ re-entrant calls

    /**
     * A model that calls itself {@code in[0]} times deep: {@code f([0, r...]) = [0, 2r...]},
     * {@code f([k, r...]) = [k, f([k-1, r...])[1:] + 1]}: so {@code [k, 2r + k]}.
     */
    private PythonModel recursive(String name, int workers, Duration timeout) {
        PythonModel[] self = new PythonModel[1];
        PythonModel.Builder b = back(name, 0, in -> {
            if (in[0] == 0) {
                float[] out = Models.doubled(in);
                out[0] = 0;
                return out;
            }
            float[] next = in.clone();
            next[0] = in[0] - 1;
            try (Tensor t = Tensor.of(next, next.length); Tensor inner = self[0].predict(t)) {
                float[] out = inner.toFloatArray();
                out[0] = in[0];
                for (int i = 1; i < out.length; i++) {
                    out[i] += 1;
                }
                return out;
            }
        }).workers(workers);
        if (timeout != null) {
            b.timeout(timeout);
        }
        self[0] = b.build();
        return self[0];
    }

    private static float[] recursiveAnswer(float[] in) {
        float[] out = Models.doubled(in);
        out[0] = in[0];
        for (int i = 1; i < out.length; i++) {
            out[i] += in[0];
        }
        return out;
    }

    @Test
    @Timeout(120) // a call waiting for the slot its own outer call holds would never return
    void reEntrantCallsFromSeveralPlatformCallersWithOneAndTwoWorkersAnswerEachAndKeepTheLimit() throws Exception {
        for (int workers = 1; workers <= 2; workers++) {
            int exports = Dlpack.liveExports();
            long bytes = Dlpack.nativeBytesInUse();
            String name = "recursive-" + workers;
            AtomicInteger wrong = new AtomicInteger();
            ConcurrentLinkedQueue<Throwable> other = new ConcurrentLinkedQueue<>();
            try (PythonModel model = recursive(name, workers, null)) {
                List<Thread> callers = new ArrayList<>();
                for (int c = 0; c < 4; c++) {
                    int caller = c;
                    Runnable body = () -> {
                        for (int i = 0; i < 20; i++) {
                            float[] v = values(caller, i);
                            v[0] = 3;
                            try (Tensor x = Tensor.of(v, 8); Tensor y = model.predict(x)) {
                                if (!Arrays.equals(y.toFloatArray(), recursiveAnswer(v))) {
                                    wrong.incrementAndGet();
                                }
                            } catch (Throwable t) {
                                other.add(t);
                            }
                        }
                    };
                    // the virtual callers' calls run on the model's threads, whose predict refuses (ISE)
                    callers.add(Thread.ofPlatform().start(body));
                }
                for (Thread t : callers) {
                    assertThat(t.join(Duration.ofSeconds(60))).as("no deadlock").isTrue();
                }
                ModelStats s = model.stats();
                System.out.printf("re-entrant, %d workers: %s, other %s%n", workers, s, other);
                // a platform caller that found the slots busy queued: its call ran on a model thread,
                // where the nested predict is refused (documented: predict on the model's own thread)
                for (Throwable t : other) {
                    assertThat(t).isInstanceOf(PythonException.class).hasMessageContaining("model's own thread");
                }
                assertThat(wrong.get()).isZero();
                assertAddsUp(s, 0);
                assertThat(s.answered()).isEqualTo((80 - other.size()) * 4L);
                assertThat(state(name, "most_threads")).as("threads in the model at once").isBetween(1L, (long) workers);
                other.clear();
            }
            assertThat(aliveOutputs()).isZero();
            releasedAfterJavaGc(exports, bytes);
        }
    }

    @Test
    @Timeout(60)
    void aDeepReEntrantCallUnwindsToItsAnswerAndLeavesTheThreadOutsideTheModel() throws Exception {
        String name = "deep";
        try (PythonModel model = recursive(name, 1, null); Tensor x = Tensor.of(new float[] {40, 1, 2, 3}, 4);
             Tensor y = model.predict(x)) {
            assertThat(y.toFloatArray()).containsExactly(recursiveAnswer(new float[] {40, 1, 2, 3}));
            assertThat(model.stats().answered()).isEqualTo(41);
            assertThat(state(name, "most")).isEqualTo(41);
            assertThat(state(name, "most_threads")).isEqualTo(1);
            assertThat(model.stats().queueWaitP99()).isZero();
        }
    }

    /**
     * After a call whose nested call failed (its model raised, or it timed out), this thread is out
     * of its own call: its next call finding the only slot held by another caller waits for it
     * rather than running beside it on the outer call's (gone) slot.
     */
    @Test
    @Timeout(90)
    void aNestedCallThatFailsOrTimesOutLeavesNoDepthBehindAndTheStatsAddUp() throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        String name = "nested-fails";
        PythonModel[] self = new PythonModel[1];
        // in[0]: 1 calls the model again on [in[1], ...]; 0 answers 2x; -1 throws; -2 sleeps 300 ms (past the deadline)
        try (PythonModel model = back(name, 0, in -> {
            if (in[0] == 1) {
                float[] next = Arrays.copyOfRange(in, 1, in.length);
                try (Tensor t = Tensor.of(next, next.length); Tensor inner = self[0].predict(t)) {
                    return inner.toFloatArray();
                }
            }
            if (in[0] == -1) {
                throw new IllegalArgumentException("the nested call fails");
            }
            if (in[0] == -2) {
                Models.PY.exec("import time\ntime.sleep(0.3)");
            }
            return Models.doubled(in);
        }).workers(1).timeout(Duration.ofMillis(200)).build()) {
            self[0] = model;
            // the nested call raises: so does the outer one
            try (Tensor x = Tensor.of(new float[] {1, -1, 5}, 3)) {
                assertThatThrownBy(() -> model.predict(x)).isInstanceOf(PythonException.class)
                        .hasMessageContaining("the nested call fails");
            }
            // the nested call times out (on its own thread, once it is over): the outer one fails with it
            try (Tensor x = Tensor.of(new float[] {1, -2, 5}, 3)) {
                // a PythonException carrying the nested ModelTimeoutException (the outer call, past its
                // deadline too, raised: counted failed), or the outer call's own ModelTimeoutException
                assertThatThrownBy(() -> model.predict(x)).isInstanceOfAny(PythonException.class,
                        ModelTimeoutException.class);
            }
            ModelStats s = model.stats();
            assertThat(s.requests()).isEqualTo(4);
            assertThat(s.timedOut()).as("the nested call that ran past its deadline").isBetween(1L, 2L);
            assertThat(s.answered()).isZero();
            assertAddsUp(s, 0);
            assertThat(aliveOutputs()).as("the timed-out nested call's outputs").isZero();

            // now another caller holds the only slot for 300 ms: this thread's call waits for it
            Thread holder = Thread.ofPlatform().start(() -> {
                try (Tensor x = Tensor.of(new float[] {-2, 7}, 2)) {
                    assertThatThrownBy(() -> model.predict(x)).isInstanceOf(ModelTimeoutException.class);
                }
            });
            Models.await("__import__('own_review').state['" + name + "']['active'] == 1");
            try (Tensor x = Tensor.of(new float[] {0, 4}, 2)) {
                Map<String, Tensor> out;
                try {
                    out = model.predict(Map.of("input", x));
                    out.values().forEach(Tensor::close);
                } catch (ModelTimeoutException queuedBehind) {
                    // waited in the queue past its deadline: fine, it did not run beside the holder
                }
            }
            assertThat(holder.join(Duration.ofSeconds(10))).isTrue();
            assertThat(state(name, "most_threads")).as("threads in the model at once (workers 1)").isEqualTo(1);
            assertAddsUp(model.stats(), 0);
        }
        assertThat(aliveOutputs()).isZero();
        releasedAfterJavaGc(exports, bytes);
    }

    @Test
    @Timeout(60)
    void aReEntrantCallWhoseOuterCallRunsPastTheDeadlineAnswersTheInnerAndTimesOutTheOuter() throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        String name = "outer-late";
        PythonModel[] self = new PythonModel[1];
        float[][] inner = new float[1][];
        // the outer call (in[0] == 1) calls the model again, then sleeps past the deadline
        try (PythonModel model = back(name, 0, in -> {
            if (in[0] == 1) {
                try (Tensor t = Tensor.of(new float[] {0, 3}, 2); Tensor y = self[0].predict(t)) {
                    inner[0] = y.toFloatArray();
                }
                Models.PY.exec("import time\ntime.sleep(0.25)");
            }
            return Models.doubled(in);
        }).workers(1).timeout(Duration.ofMillis(150)).build(); Tensor x = Tensor.of(new float[] {1, 9}, 2)) {
            self[0] = model;
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(ModelTimeoutException.class)
                    .hasMessageContaining("caller's thread");
            assertThat(inner[0]).containsExactly(0, 6);
            ModelStats s = model.stats();
            assertThat(s.answered()).isEqualTo(1);
            assertThat(s.timedOut()).isEqualTo(1);
            assertAddsUp(s, 0);
            assertThat(x.toFloatArray()).containsExactly(1, 9);
        }
        assertThat(aliveOutputs()).isZero();
        Models.assertReleasedSince(exports, bytes);
    }

    @Test
    @Timeout(60)
    void aNestedCallFromAnotherThreadOfTheCallbackWaitsForTheSlotUntilItsDeadlineWithOneWorker() throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        String name = "other-thread-1";
        PythonModel[] self = new PythonModel[1];
        AtomicReference<Throwable> innerThrown = new AtomicReference<>();
        // the outer call's callback runs the model on another platform thread and waits for it
        // (holding the GIL): the only slot is the outer call's, so the inner call can only time out
        try (PythonModel model = back(name, 0, in -> {
            if (in[0] == 1) {
                Thread t = Thread.ofPlatform().start(() -> {
                    try (Tensor x = Tensor.of(new float[] {0, 2}, 2)) {
                        self[0].predict(x).close();
                    } catch (Throwable e) {
                        innerThrown.set(e);
                    }
                });
                t.join();
            }
            return Models.doubled(in);
        }).workers(1).timeout(Duration.ofMillis(300)).build(); Tensor x = Tensor.of(new float[] {1, 9}, 2)) {
            self[0] = model;
            long start = System.nanoTime();
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(ModelTimeoutException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
            assertThat(innerThrown.get()).isInstanceOf(ModelTimeoutException.class)
                    .hasMessageContaining("waited in the queue");
            // the model thread that took the inner request finds it settled and runs nothing
            try (Tensor z = Tensor.of(new float[] {0, 5}, 2); Tensor y = model.predict(z)) {
                assertThat(y.toFloatArray()).containsExactly(0, 10);
            }
            ModelStats s = model.stats();
            assertThat(s.timedOut()).isEqualTo(2);
            assertThat(s.answered()).isEqualTo(1);
            assertAddsUp(s, 0);
            assertThat(state(name, "calls")).isEqualTo(2);
        }
        assertThat(aliveOutputs()).isZero();
        Models.assertReleasedSince(exports, bytes);
    }

    @Test
    @Timeout(60)
    void aNestedCallFromAnotherThreadOfTheCallbackRunsOnTheSecondSlotWithTwoWorkers() throws Exception {
        String name = "other-thread-2";
        PythonModel[] self = new PythonModel[1];
        ConcurrentLinkedQueue<float[]> inner = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<Throwable> thrown = new ConcurrentLinkedQueue<>();
        try (PythonModel model = back(name, 0, in -> {
            if (in[0] == 1) {
                // a platform thread (its own call on the free slot) and a virtual one (a model thread)
                for (boolean virtual : new boolean[] {false, true}) {
                    Runnable body = () -> {
                        try (Tensor x = Tensor.of(new float[] {0, 2}, 2); Tensor y = self[0].predict(x)) {
                            inner.add(y.toFloatArray());
                        } catch (Throwable e) {
                            thrown.add(e);
                        }
                    };
                    Thread t = virtual ? Thread.ofVirtual().start(body) : Thread.ofPlatform().start(body);
                    Models.PY.allowThreads(() -> {
                        try {
                            t.join();
                        } catch (InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                    });
                }
            }
            return Models.doubled(in);
        }).workers(2).build(); Tensor x = Tensor.of(new float[] {1, 9}, 2)) {
            self[0] = model;
            try (Tensor y = model.predict(x)) {
                assertThat(y.toFloatArray()).containsExactly(2, 18);
            }
            assertThat(thrown).isEmpty();
            assertThat(inner).hasSize(2).allSatisfy(v -> assertThat(v).containsExactly(0, 4));
            assertThat(model.stats().answered()).isEqualTo(3);
            assertThat(state(name, "most_threads")).isEqualTo(2);
        }
    }

    @Test
    @Timeout(60)
    void anInterruptDuringAReEntrantCallLeavesBothCallsToAnswerAndKeepsTheStatus() throws Exception {
        String name = "interrupted-reentrant";
        PythonModel[] self = new PythonModel[1];
        // in[0] == 1: the outer call sleeps 500 ms in Python (interrupted meanwhile), then calls the model again
        try (PythonModel model = back(name, 0, in -> {
            if (in[0] == 1) {
                Models.PY.exec("import time\ntime.sleep(0.5)");
                try (Tensor t = Tensor.of(new float[] {0, 3}, 2); Tensor y = self[0].predict(t)) {
                    float[] out = y.toFloatArray();
                    out[0] = 1;
                    return out;
                }
            }
            return Models.doubled(in);
        }).workers(1).build()) {
            self[0] = model;
            AtomicReference<Object> outcome = new AtomicReference<>();
            boolean[] flag = new boolean[1];
            Thread t = Thread.ofPlatform().start(() -> {
                try (Tensor x = Tensor.of(new float[] {1, 9}, 2); Tensor y = model.predict(x)) {
                    outcome.set(y.toFloatArray());
                } catch (Throwable e) {
                    outcome.set(e);
                }
                flag[0] = Thread.interrupted();
            });
            Models.await("__import__('own_review').state['" + name + "']['active'] == 1");
            t.interrupt();
            assertThat(t.join(Duration.ofSeconds(20))).isTrue();
            assertThat(outcome.get()).isInstanceOf(float[].class);
            assertThat((float[]) outcome.get()).containsExactly(1, 6);
            assertThat(flag[0]).as("interrupt status kept").isTrue();
            assertThat(model.stats().answered()).isEqualTo(2);
            assertAddsUp(model.stats(), 0);
        }
    }

    /**
     * docs/models.md: "A model that calls back into Java, which calls the same model again on that
     * thread, runs the inner call there too, on the outer call's slot." Whether the outer call ran
     * on its caller's thread depends on timing (a slot free, nothing queued) and on the caller's
     * kind: the outer call of a virtual caller, or of a platform caller that found the slot busy,
     * runs on a model thread, and there the same nested predict must work as well.
     */
    @Test
    @Timeout(60)
    void aReEntrantModelAnswersWhenItsOuterCallRanOnAModelThread() throws Exception {
        String name = "reentrant-queued";
        try (PythonModel model = recursive(name, 1, Duration.ofSeconds(20))) {
            // a virtual caller: its calls always run on the model's thread
            AtomicReference<Object> virtual = new AtomicReference<>();
            Thread v = Thread.ofVirtual().start(() -> {
                try (Tensor x = Tensor.of(new float[] {1, 5}, 2); Tensor y = model.predict(x)) {
                    virtual.set(y.toFloatArray());
                } catch (Throwable e) {
                    virtual.set(e);
                }
            });
            assertThat(v.join(Duration.ofSeconds(30))).isTrue();
            System.out.println("re-entrant model, virtual caller: " + (virtual.get() instanceof Throwable e
                    ? e.toString().lines().findFirst().orElse("") : Arrays.toString((float[]) virtual.get())));
            assertThat(virtual.get()).as("the virtual caller's re-entrant call").isInstanceOf(float[].class);
            assertThat((float[]) virtual.get()).containsExactly(recursiveAnswer(new float[] {1, 5}));
        }
    }

    // ------------------------------------------------------------------ close

    @Test
    @Timeout(60)
    void closeFromAnotherThreadWhileAReEntrantCallRunsWaitsForItAndRefusesTheNestedCallsAfter() throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        String name = "close-reentrant";
        PythonModel[] self = new PythonModel[1];
        AtomicInteger refusedInside = new AtomicInteger();
        // each level sleeps 200 ms in Python, then calls the model again (in[0] levels)
        PythonModel model = back(name, 0.2, in -> {
            if (in[0] == 0) {
                return Models.doubled(in);
            }
            float[] next = in.clone();
            next[0] = in[0] - 1;
            try (Tensor t = Tensor.of(next, next.length); Tensor inner = self[0].predict(t)) {
                return inner.toFloatArray();
            } catch (IllegalStateException closed) {
                refusedInside.incrementAndGet();
                return new float[] {-1, -1};
            }
        }).workers(1).build();
        self[0] = model;
        AtomicReference<Object> outcome = new AtomicReference<>();
        Thread caller = Thread.ofPlatform().start(() -> {
            try (Tensor x = Tensor.of(new float[] {5, 3}, 2); Tensor y = model.predict(x)) {
                outcome.set(y.toFloatArray());
            } catch (Throwable t) {
                outcome.set(t);
            }
        });
        Models.await("__import__('own_review').state['" + name + "']['active'] >= 2");
        model.close();
        assertThat(state(name, "active")).as("close waited for the call on its caller's thread").isZero();
        assertThat(caller.join(Duration.ofSeconds(10))).isTrue();
        assertThat(refusedInside.get()).isEqualTo(1);
        assertThat(outcome.get()).isInstanceOf(float[].class);
        assertThat((float[]) outcome.get()).containsExactly(-1, -1);
        ModelStats s = model.stats();
        // each call that ran answered (the outer one and its nested ones up to the refused one)
        assertThat(s.answered()).isEqualTo(state(name, "calls")).isBetween(2L, 5L);
        assertAddsUp(s, 0);
        assertThat(aliveOutputs()).isZero();
        Models.assertReleasedSince(exports, bytes);
    }

    /**
     * close() from inside the model's own call on the caller's thread: the slot it waits for is the
     * one this very call holds (as a model thread's callback could not wait for itself).
     */
    @Test
    @Timeout(60)
    void closeFromInsideItsOwnCallOnTheCallersThreadDoesNotWaitForItself() throws Exception {
        String name = "close-inside";
        PythonModel[] self = new PythonModel[1];
        AtomicLong closeNanos = new AtomicLong();
        AtomicReference<Throwable> nested = new AtomicReference<>();
        try (PythonModel model = back(name, 0, in -> {
            long start = System.nanoTime();
            self[0].close();
            closeNanos.set(System.nanoTime() - start);
            try (Tensor t = Tensor.of(new float[] {1}, 1)) {
                self[0].predict(t).close();
            } catch (Throwable e) {
                nested.set(e);
            }
            return Models.doubled(in);
        }).workers(1).build(); Tensor x = Tensor.of(new float[] {4}, 1)) {
            self[0] = model;
            try (Tensor y = model.predict(x)) {
                assertThat(y.toFloatArray()).containsExactly(8);
            }
            System.out.printf("close from inside its own call took %.1f ms%n", closeNanos.get() / 1e6);
            assertThat(nested.get()).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            assertThat(Duration.ofNanos(closeNanos.get())).as("close() inside the call waited for itself")
                    .isLessThan(Duration.ofSeconds(5));
            assertThat(model.isClosed()).isTrue();
            assertAddsUp(model.stats(), 0);
        }
    }

    @Test
    @Timeout(180)
    void closeRacingPlatformCallersOnTheirOwnThreadsWithADeadlineSettlesEachCallExactlyAndFreesEverything()
            throws Exception {
        for (int round = 0; round < 4; round++) {
            int exports = Dlpack.liveExports();
            long bytes = Dlpack.nativeBytesInUse();
            String mode = round % 2 == 0 ? "identity" : "double";
            String name = "close-deadline-" + round;
            PythonModel model = model(name, "bimodal", mode).workers(2).timeout(Duration.ofMillis(15)).build();
            AtomicInteger answered = new AtomicInteger();
            AtomicInteger timedOut = new AtomicInteger();
            AtomicInteger refused = new AtomicInteger();
            AtomicInteger wrong = new AtomicInteger();
            ConcurrentLinkedQueue<Throwable> other = new ConcurrentLinkedQueue<>();
            ConcurrentLinkedQueue<Object[]> kept = new ConcurrentLinkedQueue<>();
            List<Thread> callers = new ArrayList<>();
            for (int c = 0; c < 8; c++) {
                int caller = c;
                Runnable body = () -> {
                    for (int i = 0; i < 100_000; i++) {
                        float[] v = values(caller, i % 1000);
                        float[] expected = mode.equals("identity") ? v : Models.doubled(v);
                        try (Tensor x = Tensor.of(v, 8)) {
                            Tensor y = model.predict(x);
                            answered.incrementAndGet();
                            if (i % 7 == 0) {
                                kept.add(new Object[] {y, expected}); // read after close and after x is closed
                            } else {
                                try (y) {
                                    if (!Arrays.equals(y.toFloatArray(), expected)) {
                                        wrong.incrementAndGet();
                                    }
                                }
                            }
                        } catch (ModelTimeoutException e) {
                            timedOut.incrementAndGet();
                        } catch (IllegalStateException closed) {
                            refused.incrementAndGet();
                            return;
                        } catch (Throwable t) {
                            other.add(t);
                            return;
                        }
                    }
                };
                callers.add(caller < 6 ? Thread.ofPlatform().start(body) : Thread.ofVirtual().start(body));
            }
            Thread.sleep(250 + round * 41);
            model.close();
            for (Thread t : callers) {
                assertThat(t.join(Duration.ofSeconds(30))).isTrue();
            }
            for (Object[] k : kept) {
                try (Tensor y = (Tensor) k[0]) {
                    if (!Arrays.equals(y.toFloatArray(), (float[]) k[1])) {
                        wrong.incrementAndGet();
                    }
                }
            }
            ModelStats s = model.stats();
            System.out.printf("close with a deadline, round %d (%s): answered %d timed out %d refused %d, stats %s%n",
                    round, mode, answered.get(), timedOut.get(), refused.get(), s);
            assertThat(other).isEmpty();
            assertThat(wrong.get()).isZero();
            assertThat(refused.get()).isEqualTo(8);
            assertThat(s.answered()).isEqualTo(answered.get());
            assertThat(s.timedOut()).isEqualTo(timedOut.get());
            assertAddsUp(s, 0);
            // close returns within the deadline: a model thread's call whose caller timed out may still run
            Models.await("__import__('own_review').state['" + name + "']['active'] == 0");
            assertThat(state(name, "most_threads")).isBetween(1L, 2L);
            assertThat(aliveOutputs()).isZero();
            Models.assertReleasedSince(exports, bytes);
        }
    }
}
