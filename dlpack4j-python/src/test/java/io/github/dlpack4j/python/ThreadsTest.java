package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

class ThreadsTest {
    static final Python PY = Python.start();

    @Test
    @Tag("any-cpython")
    void eightThreadsMakingTenThousandCallsEachGetRightResultsWithoutDeadlock() throws Exception {
        PY.exec("def square(x):\n    return x * x");
        ExecutorService pool = Executors.newFixedThreadPool(8);
        long start = System.nanoTime();
        try (PyObject square = PY.getGlobal("square")) {
            List<Future<Long>> futures = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int base = t * 10_000;
                futures.add(pool.submit(() -> {
                    long sum = 0;
                    for (int i = 0; i < 10_000; i++) {
                        try (PyObject r = square.call(base + i)) {
                            long v = r.asLong();
                            if (v != (long) (base + i) * (base + i)) {
                                throw new AssertionError("wrong result for " + (base + i) + ": " + v);
                            }
                            sum += v;
                        }
                    }
                    return sum;
                }));
            }
            long total = 0;
            for (Future<Long> f : futures) {
                total += f.get(120, TimeUnit.SECONDS);
            }
            long expected = 0;
            for (long i = 0; i < 80_000; i++) {
                expected += i * i;
            }
            assertThat(total).isEqualTo(expected);
        } finally {
            pool.shutdownNow();
        }
        assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start)).as("seconds for 80,000 calls").isLessThan(60);
    }

    @Test
    void eightThreadsHalfOfThemInScopesImportExportAndCallWithRightResultsAndLeaveNothingBehind() throws Exception {
        PY.exec("""
                import numpy as np, torch, sys, gc
                mix_a = np.arange(8.0)
                mix_t = torch.arange(8.0)
                def mix_square(x):
                    return x * x
                def mix_sum(x):
                    return float(np.from_dlpack(x).sum())""");
        PythonLeaks leaks = PythonLeaks.now(PY, "mix_a", "mix_t");
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try (PyObject a = PY.getGlobal("mix_a"); PyObject t = PY.getGlobal("mix_t");
             PyObject square = PY.getGlobal("mix_square"); PyObject sum = PY.getGlobal("mix_sum")) {
            List<Future<?>> futures = new ArrayList<>();
            for (int w = 0; w < 8; w++) {
                boolean scoped = w % 2 == 0;
                int worker = w;
                futures.add(pool.submit(() -> {
                    for (int batch = 0; batch < 20; batch++) {
                        Runnable work = () -> {
                            for (int i = 0; i < 100; i++) {
                                try (ManagedTensor m = PythonDlpack.fromDlpack(i % 2 == 0 ? a : t)) {
                                    check(m.tensor().getDouble(7), 7.0);
                                }
                                try (Tensor j = Tensor.of(new double[] {i, worker}); PyObject o = PythonDlpack.toPython(j)) {
                                    check((Double) sum.invoke(o), i + worker);
                                }
                                try (PyObject r = square.call(i)) {
                                    check(r.asLong(), (double) i * i);
                                }
                            }
                        };
                        if (!scoped) {
                            work.run();
                        } else if (batch % 4 == 0) { // a scope that lets go of the GIL for a while in the middle
                            PY.withGil(() -> {
                                work.run();
                                PY.allowThreads(() -> javaWork(2));
                                work.run();
                            });
                        } else {
                            PY.withGil(work);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        leaks.assertBack();
    }

    /** Throws in a worker, where AssertJ's failure would read the same but cost more per call. */
    private static void check(double actual, double expected) {
        if (actual != expected) {
            throw new AssertionError("expected " + expected + ", got " + actual);
        }
    }


    @Test
    @Tag("any-cpython")
    void aLongPythonLoopDoesNotHoldUpJavaThreadsThatDoNotCallPython() throws Exception {
        long iterations = javaWork(100); // what 100 ms of pure Java work is here
        CompletableFuture<Void> python = CompletableFuture.runAsync(() -> PY.exec(
                "import time\nstop = False\nend = time.time() + 30\nwhile time.time() < end and not stop:\n    pass"));
        Thread.sleep(200); // the Python loop has started and holds the GIL
        long start = System.nanoTime();
        javaIterations(iterations);
        long took = System.nanoTime() - start;
        boolean pythonStillRunning = !python.isDone();
        PY.exec("stop = True");
        python.get(60, TimeUnit.SECONDS);
        // No throughput ratio (that depends on the cores and the load): the same work must simply
        // finish while Python still holds the GIL, which a lock shared with Python would prevent.
        assertThat(pythonStillRunning).as("100 ms of Java work done within %d ms, beside a 30 s Python loop",
                TimeUnit.NANOSECONDS.toMillis(took)).isTrue();
    }

    /** Iterations of a pure-Java loop done in {@code millis}. */
    private static long javaWork(long millis) {
        long end = System.nanoTime() + millis * 1_000_000;
        long n = 0;
        while (System.nanoTime() < end) {
            spin();
            n++;
        }
        return n;
    }

    /** {@code n} iterations of the loop {@link #javaWork} counts. */
    private static void javaIterations(long n) {
        for (long i = 0; i < n; i++) {
            spin();
        }
    }

    private static double sink;
    private static double[] garbage;

    /** Arithmetic and 16 KiB of garbage, as real Java work makes. */
    private static void spin() {
        double x = sink + 1;
        for (int i = 0; i < 1000; i++) {
            x = Math.sqrt(x + i);
        }
        garbage = new double[2048];
        sink = x + garbage.length;
    }

    @Test
    @Tag("any-cpython")
    void aVirtualThreadsCallRunsOnADlpack4jPythonThreadAndAPlatformThreadsOnItself() throws Exception {
        AtomicReference<Throwable> error = new AtomicReference<>();
        AtomicReference<String> ranOn = new AtomicReference<>();
        try (PyObject where = PY.function(args -> {
            ranOn.set(Thread.currentThread().getName() + (Thread.currentThread().isVirtual() ? " (virtual)" : ""));
            return 2;
        })) {
            Thread vt = Thread.ofVirtual().name("caller").start(() -> {
                try {
                    assertThat(where.invoke()).isEqualTo(2L);
                } catch (Throwable t) {
                    error.set(t);
                }
            });
            vt.join(10_000);
            assertThat(vt.isAlive()).isFalse();
            assertThat(error.get()).isNull();
            assertThat(ranOn.get()).startsWith("dlpack4j-python-").doesNotContain("virtual");

            Thread platform = Thread.ofPlatform().name("platform-caller").start(() -> where.invoke());
            platform.join(10_000);
            assertThat(ranOn.get()).isEqualTo("platform-caller");
        }
    }

    @Test
    @Tag("any-cpython")
    void javaCodeCalledFromPythonMayCallPythonAgainOnTheSameThread() {
        try (PyObject nested = PY.function(args -> PY.eval("sum(range(10))"))) {
            PY.setGlobal("nested", nested);
            try (PyObject r = PY.eval("nested() + 1")) {
                assertThat(r.asLong()).isEqualTo(46);
            }
        }
        assertThatThrownBy(() -> PY.eval("nested(")).isInstanceOf(PythonException.class);
    }

    @Test
    @Tag("any-cpython")
    void aReferenceClosedWithoutTheGilIsReleasedSoonWithoutAnotherCall() throws Exception {
        java.util.concurrent.CountDownLatch deleted = new java.util.concurrent.CountDownLatch(1);
        try (PyObject signal = PY.function(args -> {
            deleted.countDown();
            return null;
        })) {
            PY.setGlobal("signal_deleted", signal);
            PY.exec("class Watched:\n    def __del__(self):\n        signal_deleted()");
            PyObject watched = PY.eval("Watched()");
            Thread closer = new Thread(watched::close); // a thread that never holds the GIL
            closer.start();
            closer.join();
            // No further Python call from this test: the decref thread must apply it.
            assertThat(deleted.await(5, TimeUnit.SECONDS)).as("__del__ ran").isTrue();
        }
    }

    @Test
    @Tag("any-cpython")
    void pythonThreadsCallJavaFunctionsConcurrentlyAndEndCleanlyTwice() {
        java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
        java.util.Set<String> threads = java.util.concurrent.ConcurrentHashMap.newKeySet();
        try (PyObject increment = PY.function(args -> {
            calls.incrementAndGet();
            threads.add(Thread.currentThread().getName());
            return args[0].asLong() + 1;
        })) {
            PY.setGlobal("java_increment", increment);
            PY.exec("""
                    import threading
                    def py_threads_run():
                        results = []
                        def work():
                            total = 0
                            for _ in range(500):
                                total = java_increment(total)
                            results.append(total)
                        started = [threading.Thread(target=work) for _ in range(4)]
                        for t in started:
                            t.start()
                        for t in started:
                            t.join()
                        return results, threading.active_count()""");
            for (int round = 0; round < 2; round++) { // the threads' states were freed by Python in between
                try (PyObject r = PY.eval("py_threads_run()")) {
                    assertThat(r.toJava()).isEqualTo(List.of(List.of(500L, 500L, 500L, 500L), 1L));
                }
            }
        }
        assertThat(calls.get()).isEqualTo(4_000);
        assertThat(threads).as("Java saw Python's threads").hasSizeGreaterThanOrEqualTo(2);
    }

    @Test
    @Tag("any-cpython")
    void aThreadsFirstCallGivesTheGilBack() throws Exception {
        for (int i = 0; i < 4; i++) {
            Thread t = new Thread(() -> PY.eval("1").close());
            t.start();
            t.join(10_000);
            assertThat(t.isAlive()).isFalse();
        }
        CompletableFuture<Long> other = CompletableFuture.supplyAsync(() -> {
            try (PyObject r = PY.eval("6 * 7")) {
                return r.asLong();
            }
        });
        assertThat(other.get(10, TimeUnit.SECONDS)).isEqualTo(42);
    }
}
