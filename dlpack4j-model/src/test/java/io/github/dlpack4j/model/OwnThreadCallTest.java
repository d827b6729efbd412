package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonException;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A platform caller of a model without batching runs the model call on its own thread when a slot
 * is free and nothing waits: what it must keep of the queued route (answers, the workers limit,
 * overload, deadlines, close) and what it must not leak.
 */
class OwnThreadCallTest {
    @BeforeAll
    static void module() {
        Models.pythonModule("own_thread", """
                import threading
                import time
                import numpy as np

                state = {}  # by model: its calls running now, the most at once, the threads that ran it
                lock = threading.Lock()

                def make(seconds, name):
                    state[name] = {"active": 0, "most": 0, "threads": set()}
                    mine = state[name]
                    def run(x):
                        with lock:
                            mine["active"] += 1
                            mine["most"] = max(mine["most"], mine["active"])
                            mine["threads"].add(threading.get_ident())
                        try:
                            time.sleep(seconds)
                            return np.from_dlpack(x) * 2
                        finally:
                            with lock:
                                mine["active"] -= 1
                    return run

                def thread_states():
                    # the interpreter's thread states, one per OS thread that ever called in
                    import ctypes
                    api = ctypes.pythonapi
                    api.PyInterpreterState_Head.restype = ctypes.c_void_p
                    api.PyInterpreterState_ThreadHead.restype = ctypes.c_void_p
                    api.PyInterpreterState_ThreadHead.argtypes = [ctypes.c_void_p]
                    api.PyThreadState_Next.restype = ctypes.c_void_p
                    api.PyThreadState_Next.argtypes = [ctypes.c_void_p]
                    n = 0
                    t = api.PyInterpreterState_ThreadHead(api.PyInterpreterState_Head())
                    while t:
                        n += 1
                        t = api.PyThreadState_Next(t)
                    return n

                def calling_back(fn):
                    def run(x):
                        return fn(np.from_dlpack(x))
                    return run
                """);
    }

    /** A model that sleeps {@code seconds} a call and doubles its input, counted under {@code name}. */
    private static PythonModel.Builder model(String name, double seconds) {
        return PythonModel.builder().python(Models.PY).name(name).factory("own_thread", "make", seconds, name);
    }

    /** {@code what} ({@code active}, {@code most}) of the model built under {@code name}. */
    private static long count(String name, String what) {
        return Models.pyLong("__import__('own_thread').state['" + name + "']['" + what + "']");
    }

    private static float[] values(int caller, int call) {
        return Models.callValues(caller, call, 8);
    }

    @Test
    void aPlatformCallerRunningItsOwnCallGetsTheAnswerTorchGives() {
        Path file = Models.linearTorchScript();
        float[] values = new float[12];
        Random random = new Random(7);
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) random.nextGaussian();
        }
        double[] expected = Models.torchAnswer("torch.jit.load(FILE)", file, values, 3);
        try (PythonModel model = PythonModel.builder().python(Models.PY).torchScript(file).timeout(Duration.ofSeconds(30))
                .input("x", DataType.FLOAT32, -1, 4).output("y", DataType.FLOAT32, -1, 3).build()) {
            for (int i = 0; i < 100; i++) {
                try (Tensor x = Tensor.of(values, 3, 4); Tensor y = model.predict(x)) {
                    assertThat(y.toDoubleArray()).containsExactly(expected);
                }
            }
            assertThat(model.stats().answered()).isEqualTo(100);
            assertThat(model.stats().queueWaitP99()).isZero(); // none waited: each ran on its caller's thread
        }
    }

    @Test
    void workersBoundTheCallsAtOnceUnderAMixOfPlatformAndVirtualCallers() throws Exception {
        try (PythonModel model = model("mix", 0.001).workers(2).build()) {
            AtomicInteger wrong = new AtomicInteger();
            List<Thread> callers = new ArrayList<>();
            for (int c = 0; c < 16; c++) {
                int caller = c;
                Runnable body = () -> {
                    for (int i = 0; i < 40; i++) {
                        if (!Models.answersDoubled(model, caller, i, 8)) {
                            wrong.incrementAndGet();
                        }
                    }
                };
                // the platform callers first: the first of them finds a slot free and nothing queued
                callers.add(caller < 8 ? Thread.ofPlatform().start(body) : Thread.ofVirtual().start(body));
            }
            for (Thread t : callers) {
                assertThat(t.join(Duration.ofSeconds(60))).isTrue();
            }
            assertThat(wrong.get()).isZero();
            assertThat(model.stats().answered()).isEqualTo(16 * 40);
            assertThat(count("mix", "most")).as("model calls at once").isBetween(1L, 2L);
            // the two model threads and at least one platform caller's own thread ran the model
            assertThat(Models.pyLong("len(__import__('own_thread').state['mix']['threads'])")).isGreaterThan(2);
        }
    }

    @Test
    void aPlatformCallerFindingEverySlotBusyQueuesAndAFullQueueRefusesAtOnce() throws Exception {
        try (PythonModel model = model("overload", 0.5).workers(1).maxQueue(1).build()) {
            List<Thread> answeredCallers = new ArrayList<>();
            for (int c = 0; c < 3; c++) {
                int caller = c;
                answeredCallers.add(Thread.ofPlatform().start(() -> {
                    try (Tensor x = Tensor.of(values(caller, 0), 8); Tensor y = model.predict(x)) {
                        assertThat(y.toFloatArray()).containsExactly(Models.doubled(values(caller, 0)));
                    }
                }));
                // the first runs on its own thread; the second is taken by the model thread, which
                // waits for the busy slot; the third waits in the queue
                if (c == 0) {
                    Models.await("__import__('own_thread').state['overload']['active'] == 1");
                }
                long until = System.nanoTime() + 5_000_000_000L;
                while ((model.stats().requests() <= c || model.queued() != (c == 2 ? 1 : 0)) && System.nanoTime() < until) {
                    Thread.sleep(1);
                }
            }
            assertThat(count("overload", "active")).isEqualTo(1);
            assertThat(model.queued()).isEqualTo(1);
            try (Tensor x = Tensor.of(values(3, 0), 8)) {
                assertThatThrownBy(() -> model.predict(x)).isInstanceOf(ModelOverloadedException.class);
            }
            for (Thread t : answeredCallers) {
                t.join();
            }
            assertThat(model.stats().rejected()).isEqualTo(1);
            assertThat(model.stats().answered()).isEqualTo(3);
        }
    }

    @Test
    void aDeadlinePassingWhileThePlatformCallerRunsTheModelFailsTheCallOnceTheModelCallIsOver() {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        try (PythonModel model = model("late", 0.2).timeout(Duration.ofMillis(50)).build();
             Tensor x = Tensor.of(values(0, 0), 8)) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(ModelTimeoutException.class)
                    .hasMessageContaining("50.0 ms").hasMessageContaining("caller's thread");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(200));
            ModelStats s = model.stats();
            assertThat(s.timedOut()).isEqualTo(1);
            assertThat(s.answered()).isZero();
            assertThat(s.batches()).isEqualTo(1);
        }
        Models.assertReleasedSince(exports, bytes); // the late outputs were let go
    }

    @Test
    void aModelThatRaisesAfterTheDeadlineOnTheCallersThreadTimesOutAsAQueuedCallWould() {
        try (PythonModel model = PythonModel.builder().python(Models.PY).source(Models.SLOW_OR_FAILING, "make", 0.2)
                .timeout(Duration.ofMillis(50)).build();
             Tensor x = Tensor.of(new float[] {-1}, 1)) {
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(ModelTimeoutException.class)
                    .satisfies(e -> assertThat(e.getSuppressed()).singleElement().isInstanceOf(PythonException.class));
            assertThat(model.stats().timedOut()).isEqualTo(1);
            assertThat(model.stats().failed()).isZero();
        }
    }

    @Test
    void aDeadlinePassingWhileAPlatformCallerWaitsForABusySlotFailsItAtTheDeadline() throws Exception {
        try (PythonModel model = model("busy-slot", 1).workers(1).timeout(Duration.ofMillis(300)).build()) {
            Thread running = Thread.ofPlatform().start(() -> {
                try (Tensor x = Tensor.of(values(0, 0), 8)) {
                    assertThatThrownBy(() -> model.predict(x)).isInstanceOf(ModelTimeoutException.class)
                            .hasMessageContaining("caller's thread");
                }
            });
            Models.await("__import__('own_thread').state['busy-slot']['active'] == 1");
            try (Tensor x = Tensor.of(values(1, 0), 8)) {
                long start = System.nanoTime();
                assertThatThrownBy(() -> model.predict(x)).isInstanceOf(ModelTimeoutException.class)
                        .hasMessageContaining("waited in the queue");
                assertThat(Duration.ofNanos(System.nanoTime() - start))
                        .as("failed at its deadline, not once the slot was free").isLessThan(Duration.ofMillis(900));
            }
            running.join();
            assertThat(model.stats().timedOut()).isEqualTo(2);
            assertThat(model.stats().answered()).isZero();
        }
    }

    @Test
    void closeUnderLoadOfPlatformCallersAnswersOrRefusesEachAndWaitsForTheirOwnCalls() throws Exception {
        PythonModel model = model("closing", 0.002).workers(2).build();
        AtomicInteger answered = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        ConcurrentLinkedQueue<Throwable> other = new ConcurrentLinkedQueue<>();
        List<Thread> callers = new ArrayList<>();
        for (int c = 0; c < 6; c++) {
            int caller = c;
            callers.add(Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 100_000; i++) {
                    try (Tensor x = Tensor.of(values(caller, i % 100), 8); Tensor y = model.predict(x)) {
                        assertThat(y.toFloatArray()).containsExactly(Models.doubled(values(caller, i % 100)));
                        answered.incrementAndGet();
                    } catch (IllegalStateException closed) {
                        refused.incrementAndGet();
                        return;
                    } catch (Throwable t) {
                        other.add(t);
                        return;
                    }
                }
            }));
        }
        Thread.sleep(300);
        model.close();
        assertThat(count("closing", "active")).as("model calls still running").isZero();
        for (Thread t : callers) {
            assertThat(t.join(Duration.ofSeconds(30))).isTrue();
        }
        assertThat(other).isEmpty();
        assertThat(refused.get()).isEqualTo(6);
        assertThat(model.stats().answered()).isEqualTo(answered.get());
        assertThat(model.stats().failed()).isZero();
    }

    @Test
    @Timeout(60) // a call waiting for the slot its own outer call holds would never return
    void aModelThatCallsBackIntoJavaOnTheCallersThreadMayCallItselfAgainThere() {
        PythonModel[] self = new PythonModel[1];
        try (PyObject back = Models.PY.function(args -> {
                 try (PyObject a = args[0]; PyObject shape = a.attr("shape"); PyObject n = shape.callMethod("__getitem__", 0)) {
                     if (n.asLong() == 1) { // the outer call: the model again, on four rows of ones
                         try (Tensor ones = Tensor.of(new float[] {1, 1, 1, 1}, 4); Tensor inner = self[0].predict(ones)) {
                             return Models.PY.eval("__import__('numpy').full((1,), " + inner.toFloatArray().length + ".0,"
                                     + " dtype='float32')");
                         }
                     }
                     return Models.PY.eval("__import__('numpy').zeros((4,), dtype='float32')");
                 }
             });
             PyObject factory = Models.PY.eval("__import__('own_thread').calling_back")) {
            Models.PY.setGlobal("_own_thread_back", back);
            Models.PY.exec("import own_thread\nown_thread.back_model = own_thread.calling_back(_own_thread_back)\n"
                    + "own_thread.back = lambda: own_thread.back_model");
            try (PythonModel model = PythonModel.builder().python(Models.PY).factory("own_thread", "back").workers(1)
                    .build()) {
                self[0] = model;
                try (Tensor x = Tensor.of(new float[] {5}, 1); Tensor y = model.predict(x)) {
                    assertThat(y.toFloatArray()).containsExactly(4f); // the inner call's four rows
                }
                assertThat(model.stats().answered()).isEqualTo(2);
            }
        }
        Models.PY.exec("import own_thread\ndel own_thread.back_model\ndel _own_thread_back");
    }

    @Test
    void tenThousandCallsFromFiftyThreadsLeakNoExportsNativeBytesOrThreadStates() throws Exception {
        try (PythonModel model = model("fifty", 0).workers(4).build();
             ExecutorService threads = Executors.newFixedThreadPool(50)) {
            // each pool thread calls Python once first: its thread state is made then, and kept for its life
            CyclicBarrier all = new CyclicBarrier(50);
            List<Future<?>> warm = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                warm.add(threads.submit(() -> {
                    Models.PY.exec("pass");
                    all.await(); // one task a thread
                    return null;
                }));
            }
            for (Future<?> f : warm) {
                f.get();
            }
            int exports = Dlpack.liveExports();
            long bytes = Dlpack.nativeBytesInUse();
            long states = Models.pyLong("__import__('own_thread').thread_states()");
            AtomicInteger wrong = new AtomicInteger();
            List<Future<?>> calls = new ArrayList<>();
            for (int c = 0; c < 50; c++) {
                int caller = c;
                calls.add(threads.submit(() -> {
                    for (int i = 0; i < 200; i++) {
                        if (!Models.answersDoubled(model, caller, i, 8)) {
                            wrong.incrementAndGet();
                        }
                    }
                }));
            }
            for (Future<?> f : calls) {
                f.get();
            }
            assertThat(wrong.get()).isZero();
            assertThat(model.stats().answered()).isEqualTo(10_000);
            // one a call would be 10,000 more; the model's four threads make theirs at their first calls
            assertThat(Models.pyLong("__import__('own_thread').thread_states()")).as("Python thread states")
                    .isLessThanOrEqualTo(states + 4);
            Models.assertReleasedSince(exports, bytes);
        }
    }
}
