package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.DlpackException;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Python from virtual threads: each call (or {@code withGil} body) of a virtual thread runs on one of
 * the runtime's platform threads ({@code dlpack4j-python-N}), and comes back as a direct call would.
 */
class VirtualThreadsTest {
    static final Python PY = Python.start();

    @Test
    void tenThousandVirtualThreadsImportCallAndExportWithRightValuesAndLeaveNothingBehind() throws Exception {
        PY.exec("""
                import numpy as np, torch, sys, gc
                vt_a = np.arange(8.0)
                def vt_square(x):
                    return x * x
                def vt_torch_sum(x):
                    return float(torch.from_dlpack(x).sum())""");
        PythonLeaks leaks = PythonLeaks.now(PY, "vt_a");
        AtomicInteger done = new AtomicInteger();
        try (PyObject a = PY.getGlobal("vt_a"); PyObject square = PY.getGlobal("vt_square");
             PyObject torchSum = PY.getGlobal("vt_torch_sum");
             ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> futures = new ArrayList<>();
            for (int n = 0; n < 10_000; n++) {
                int i = n;
                futures.add(threads.submit(() -> {
                    try (ManagedTensor m = PythonDlpack.fromDlpack(a)) {
                        check(m.tensor().getDouble(i % 8), i % 8);
                    }
                    try (PyObject r = square.call(i)) {
                        check(r.asLong(), (double) i * i);
                    }
                    try (Tensor t = Tensor.of(new float[] {i, 1, 2}); PyObject o = PythonDlpack.toPython(t)) {
                        check((Double) torchSum.invoke(o), i + 3);
                    }
                    done.incrementAndGet();
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get(120, TimeUnit.SECONDS);
            }
        }
        assertThat(done).hasValue(10_000);
        leaks.assertBack();
    }

    @Test
    void aVirtualThreadThatSleepsAndDoesSocketIoInsideWithGilHoldsTheGilThroughoutAndEveryoneFinishes() throws Exception {
        CountDownLatch inside = new CountDownLatch(1);
        AtomicLong bodyEnded = new AtomicLong();
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Integer> echo = threads.submit(() -> {
                try (Socket s = server.accept(); InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
                    int b = in.read();
                    out.write(b + 1);
                    return b;
                }
            });
            Future<Integer> blocking = threads.submit(() -> PY.withGil(() -> {
                inside.countDown();
                try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort())) {
                    Thread.sleep(300);
                    s.getOutputStream().write(41);
                    int answer = s.getInputStream().read();
                    bodyEnded.set(System.nanoTime()); // no Python code after: the GIL is held until the scope ends
                    return answer;
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }));
            assertThat(inside.await(10, TimeUnit.SECONDS)).isTrue();
            List<Future<Long>> others = new ArrayList<>();
            for (int n = 0; n < 16; n++) {
                others.add(threads.submit(() -> {
                    try (PyObject r = PY.eval("6 * 7")) {
                        return bodyEnded.get() == 0 ? -1 : r.asLong(); // -1: it ran while the scope slept
                    }
                }));
            }
            assertThat(blocking.get(30, TimeUnit.SECONDS)).isEqualTo(42);
            assertThat(echo.get(30, TimeUnit.SECONDS)).isEqualTo(41);
            for (Future<Long> f : others) {
                assertThat(f.get(30, TimeUnit.SECONDS)).as("the calls waited for the scope's end").isEqualTo(42L);
            }
        }
    }

    @Test
    void aVirtualThreadsScopeThatLetsTheGilGoWhileItSleepsLetsOtherVirtualThreadsCallPython() throws Exception {
        CountDownLatch sleeping = new CountDownLatch(1);
        CountDownLatch otherCalled = new CountDownLatch(1);
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<Boolean> scoped = threads.submit(() -> PY.withGil(() -> {
                boolean[] sawTheOther = new boolean[1];
                PY.allowThreads(() -> {
                    sleeping.countDown();
                    try {
                        sawTheOther[0] = otherCalled.await(10, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                return sawTheOther[0];
            }));
            assertThat(sleeping.await(10, TimeUnit.SECONDS)).isTrue();
            Future<Long> other = threads.submit(() -> {
                try (PyObject r = PY.eval("6 * 7")) {
                    otherCalled.countDown();
                    return r.asLong();
                }
            });
            assertThat(other.get(30, TimeUnit.SECONDS)).isEqualTo(42);
            assertThat(scoped.get(30, TimeUnit.SECONDS)).as("the other call ran while the scope let go").isTrue();
        }
    }

    @Test
    void pythonCallsBackIntoJavaFromAVirtualThreadsCallAndThatJavaCallsPythonAgain() throws Exception {
        PY.exec("""
                def vt_twice(fn, x):
                    return fn(x) + fn(x + 1)""");
        try (PyObject twice = PY.getGlobal("vt_twice");
             PyObject javaSquare = PY.function(args -> {
                 long x = args[0].asLong();
                 try (PyObject r = PY.eval(x + " * " + x); ManagedTensor m = PythonDlpack.fromDlpack(
                         PY.eval("__import__('numpy').array([" + x + ".0])"))) {
                     return r.asLong() + (long) m.tensor().getDouble(0) - x;
                 }
             });
             ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Long>> results = new ArrayList<>();
            for (int n = 0; n < 100; n++) {
                long x = n;
                results.add(threads.submit(() -> {
                    try (PyObject r = twice.call(javaSquare, x)) {
                        return r.asLong();
                    }
                }));
            }
            for (int n = 0; n < 100; n++) {
                assertThat(results.get(n).get(30, TimeUnit.SECONDS)).isEqualTo((long) n * n + (long) (n + 1) * (n + 1));
            }
        }
    }

    @Test
    @Tag("any-cpython")
    void exceptionsComeBackToAVirtualThreadAsTheyDoToAPlatformThread() throws Exception {
        PythonException direct = (PythonException) catchOn(Thread.ofPlatform(), () -> PY.eval("1 / 0"));
        PythonException fromVirtual = (PythonException) catchOn(Thread.ofVirtual(), () -> PY.eval("1 / 0"));
        assertThat(fromVirtual.pythonType()).isEqualTo("ZeroDivisionError").isEqualTo(direct.pythonType());
        assertThat(fromVirtual.pythonMessage()).isEqualTo(direct.pythonMessage());
        assertThat(fromVirtual.pythonTraceback()).contains("ZeroDivisionError");

        try (PyObject notATensor = PY.eval("object()")) {
            Throwable refused = catchOn(Thread.ofVirtual(), () -> PythonDlpack.fromDlpack(notATensor));
            Throwable refusedDirectly = catchOn(Thread.ofPlatform(), () -> PythonDlpack.fromDlpack(notATensor));
            assertThat(refused).isInstanceOf(DlpackException.class).hasMessage(refusedDirectly.getMessage());
        }
        Throwable closed = catchOn(Thread.ofVirtual(), () -> {
            PyObject o = PY.eval("1");
            o.close();
            return o.attr("real");
        });
        assertThat(closed).isInstanceOf(IllegalStateException.class).hasMessage("PyObject is closed");
    }

    @Test
    void virtualThreadsWaitingForPythonDoNotPinTheirCarriers() throws Exception {
        PY.exec("import time");
        int sleepers = 4 * Runtime.getRuntime().availableProcessors() + 8;
        AtomicLong firstSleeperDone = new AtomicLong(Long.MAX_VALUE);
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> futures = new ArrayList<>();
            for (int n = 0; n < sleepers; n++) {
                futures.add(threads.submit(() -> {
                    PY.exec("time.sleep(0.25)"); // lets the GIL go: the pool's threads sleep side by side
                    firstSleeperDone.accumulateAndGet(System.nanoTime(), Math::min);
                    return null;
                }));
            }
            Thread.sleep(50); // the sleepers are all parked or running by now
            long javaDone = threads.submit(() -> {
                long x = 0;
                for (int i = 0; i < 1000; i++) {
                    x += Integer.toString(i).hashCode();
                }
                return x == 42 ? 0 : System.nanoTime();
            }).get(30, TimeUnit.SECONDS);
            assertThat(javaDone).as("pure Java work on a virtual thread ran while the sleepers waited")
                    .isLessThan(firstSleeperDone.get());
            for (Future<?> f : futures) {
                f.get(60, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void callsSpacedWiderThanThePoolsLookingTimeAllComeBackFromEightVirtualThreadsAtOnce() throws Exception {
        // Each gap outlasts the pool's spin (its threads park) or not: the hand-over that wakes a
        // parked thread, and the one that finds a thread looking, both taken thousands of times.
        try (PyObject f = PY.eval("lambda x: x + 1");
             ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Long>> futures = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int seed = t;
                futures.add(threads.submit(() -> {
                    long sum = 0;
                    for (int i = 0; i < 1500; i++) {
                        try (PyObject r = f.call(i)) {
                            sum += r.asLong();
                        }
                        if ((i + seed) % 3 == 0) {
                            Thread.sleep(0, 100_000); // about 0.1 ms: longer than the pool looks for work
                        }
                    }
                    return sum;
                }));
            }
            for (Future<Long> fu : futures) {
                assertThat(fu.get(120, TimeUnit.SECONDS)).isEqualTo(1500L * 1501 / 2);
            }
        }
    }

    @Test
    void anIdlePoolUsesNoCpu() throws Exception {
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            threads.submit(() -> PY.exec("pass")).get(30, TimeUnit.SECONDS); // the pool has started
        }
        Thread.sleep(200); // longer than any thread of the pool looks for work before it parks
        long before = processCpuNanos();
        Thread.sleep(1000);
        // One thread looking for work without a pause would take the whole second.
        assertThat(processCpuNanos() - before).as("CPU ns of this process in a second without calls")
                .isLessThan(100_000_000L);
    }

    private static long processCpuNanos() {
        return ProcessHandle.current().info().totalCpuDuration().orElseThrow().toNanos();
    }

    @Test
    void pythonStartedFromAVirtualThreadRunsAndExitsCleanly() throws Exception {
        Run run = startFromAVirtualThreadInAFreshJvm("1");
        assertThat(run.exit()).as(run.output()).isZero();
        assertThat(run.output()).contains("sum 15 on dlpack4j-python-0");
    }

    @Test
    void aPoolSizeThatIsNotACountIsAClearError() throws Exception {
        Run run = startFromAVirtualThreadInAFreshJvm("lots");
        assertThat(run.output()).contains("dlpack4j.python.threads=lots: expected a thread count from 1 to 1024");
    }

    /** What a fresh JVM running {@link StartFromAVirtualThread} printed, and its exit status. */
    private record Run(int exit, String output) {}

    private static Run startFromAVirtualThreadInAFreshJvm(String poolSize) throws Exception {
        Path log = Files.createTempFile("dlpack4j-vt", ".log");
        try {
            List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "--enable-native-access=ALL-UNNAMED", "-Ddlpack4j.python=" + System.getProperty("dlpack4j.python"),
                    "-D" + io.github.dlpack4j.python.interpreter.PythonThreads.SIZE_PROPERTY + "=" + poolSize,
                    "-cp", System.getProperty("java.class.path"), StartFromAVirtualThread.class.getName());
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            return new Run(p.exitValue(), Files.readString(log));
        } finally {
            Files.delete(log);
        }
    }

    /** Starts Python in a virtual thread of a fresh JVM and uses it from another. */
    public static final class StartFromAVirtualThread {
        /** @param args unused */
        public static void main(String[] args) throws Exception {
            Thread t = Thread.ofVirtual().start(() -> {
                Python py = Python.start();
                try (PyObject np = py.importModule("numpy"); PyObject a = np.callMethod("arange", 6);
                     PyObject s = a.callMethod("sum")) {
                    System.out.println("sum " + s.asLong() + " on " + whereJavaCalledFromPythonRuns(py));
                }
            });
            t.join();
        }

        private static String whereJavaCalledFromPythonRuns(Python py) {
            String[] where = new String[1];
            try (PyObject f = py.function(a -> {
                where[0] = Thread.currentThread().getName();
                return null;
            }); PyObject r = f.call()) {
                return where[0];
            }
        }
    }

    private interface Call {
        Object run() throws Exception;
    }

    private static Throwable catchOn(Thread.Builder builder, Call call) throws InterruptedException {
        Throwable[] caught = new Throwable[1];
        Thread t = builder.start(() -> {
            try {
                Object r = call.run();
                if (r instanceof AutoCloseable c) {
                    c.close();
                }
            } catch (Throwable e) {
                caught[0] = e;
            }
        });
        t.join(30_000);
        assertThat(caught[0]).as("an exception").isNotNull();
        return caught[0];
    }

    private static void check(double actual, double expected) {
        if (actual != expected) {
            throw new AssertionError("expected " + expected + ", got " + actual);
        }
    }

}
