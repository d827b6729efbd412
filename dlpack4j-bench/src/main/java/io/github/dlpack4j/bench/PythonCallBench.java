package io.github.dlpack4j.bench;

import com.sun.management.OperatingSystemMXBean;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * A Java call of a no-argument Python function against the same call made by Python, in the same
 * interpreter and run: one call at a time (each takes the GIL; target for {@code invoke} at most 4x)
 * and 1,000 per GIL scope ({@code Python.withGil}; targets at most 3x {@code timeit} for
 * {@code invoke}, 5x for {@code call} with the result kept and closed). The Python figure is a loop
 * of 1,000 calls, as {@code timeit} runs it; {@code timeit} itself is printed at set-up, and again
 * after the measurement beside the Java loops timed once more ({@code [in-fork]}: the interpreter's
 * speed differs between forks).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class PythonCallBench {
    private PyObject f;
    private PyObject loop;
    private MethodHandle ensure;
    private MethodHandle release;
    private Python py;

    @Setup(Level.Trial)
    public void setUp() {
        py = Python.start();
        py.exec("""
                import timeit
                def f():
                    return None
                def loop():
                    for _ in range(1000):
                        f()
                timeit_ns = min(timeit.repeat('f()', globals=globals(), number=200_000, repeat=5)) / 200_000 * 1e9
                """);
        ensure = pythonFunction("PyGILState_Ensure", FunctionDescriptor.of(ValueLayout.JAVA_INT));
        release = pythonFunction("PyGILState_Release", FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT));
        f = py.getGlobal("f");
        loop = py.getGlobal("loop");
        try (PyObject ns = py.getGlobal("timeit_ns")) {
            System.out.printf("%n[python] timeit of f() in the embedded interpreter: %.1f ns per call%n", ns.asDouble());
        }
    }

    /** A function of the libpython that Python.start() loaded globally, found with dlsym. */
    private static MethodHandle pythonFunction(String name, FunctionDescriptor d) {
        Linker linker = Linker.nativeLinker();
        MethodHandle dlsym = linker.downcallHandle(linker.defaultLookup().findOrThrow("dlsym"),
                FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = (MemorySegment) dlsym.invokeExact(MemorySegment.NULL, arena.allocateFrom(name));
            return linker.downcallHandle(p, d);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown(BenchmarkParams params) {
        String name = params.getBenchmark();
        if (name.contains(".javaCallsPython") && !name.endsWith("FromAVirtualThread")) {
            boolean keep = name.contains("KeepingTheResult");
            boolean scoped = name.endsWith("InScope");
            long best = Long.MAX_VALUE;
            for (int round = 0; round < 5; round++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < 200; i++) {
                    if (scoped) {
                        py.withGil(() -> calls(keep, 1000));
                    } else {
                        calls(keep, 1000);
                    }
                }
                best = Math.min(best, System.nanoTime() - t0);
            }
            try (PyObject timeit = py.eval("min(timeit.repeat('f()', globals=globals(), number=200_000, repeat=5)) / 200_000 * 1e9")) {
                double java = best / 200_000.0;
                System.out.printf("%n[in-fork] %s: Java %.1f ns, timeit f() %.1f ns: %.2fx%n",
                        name.substring(name.lastIndexOf('.') + 1), java, timeit.asDouble(), java / timeit.asDouble());
            }
        }
        if (name.endsWith(".javaCallsPythonFromAVirtualThread")) {
            try {
                printHop("virtualThreadHop", 0);
                // Load: platform threads that keep a core busy in this process, as another program would.
                printHop("virtualThreadHopUnderLoad", 1);
                printHop("virtualThreadHopUnderLoad", 2);
                printIdleCpu();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        f.close();
        loop.close();
    }

    /**
     * The hop timed in this process: the best of five rounds of 20,000 calls from a platform thread
     * and from a virtual thread, in turns, while {@code busy} other threads spin.
     */
    private void printHop(String label, int busy) throws InterruptedException {
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> spinners = new ArrayList<>();
        for (int i = 0; i < busy; i++) {
            spinners.add(Thread.ofPlatform().daemon().start(() -> {
                long x = 0;
                while (!stop.get()) {
                    x += System.nanoTime() & 1;
                }
                busySink += x;
            }));
        }
        long bestPlatform = Long.MAX_VALUE;
        long bestVirtual = Long.MAX_VALUE;
        try {
            for (int round = 0; round < 5; round++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < 20; i++) {
                    calls(false, 1000);
                }
                long t1 = System.nanoTime();
                for (int i = 0; i < 20; i++) {
                    fromAVirtualThread(1000);
                }
                long t2 = System.nanoTime();
                bestPlatform = Math.min(bestPlatform, t1 - t0);
                bestVirtual = Math.min(bestVirtual, t2 - t1);
            }
        } finally {
            stop.set(true);
            for (Thread t : spinners) {
                t.join();
            }
        }
        System.out.printf("%n[in-fork] %s: %d busy threads on %d cores, f.invoke() from a platform thread %.1f ns, "
                        + "from a virtual thread %.1f ns: the hop %.2f us%n", label, busy,
                Runtime.getRuntime().availableProcessors(), bestPlatform / 20_000.0, bestVirtual / 20_000.0,
                (bestVirtual - bestPlatform) / 20_000.0 / 1000);
    }

    private static volatile long busySink;

    /** The CPU time of this process, and of the pool's threads, over 10 s without calls. */
    private static void printIdleCpu() throws InterruptedException {
        var os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        var threads = ManagementFactory.getThreadMXBean();
        LongSupplier pool = () -> Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().matches("dlpack4j-python-[0-9]+"))
                .mapToLong(t -> Math.max(0, threads.getThreadCpuTime(t.threadId()))).sum();
        Thread.sleep(1_500); // past the pool's looking and the release flusher's last look
        long process0 = os.getProcessCpuTime();
        long pool0 = pool.getAsLong();
        Thread.sleep(10_000);
        System.out.printf("%n[in-fork] idlePool: 10 s without calls: process CPU %.1f ms, the pool's threads %.2f ms%n",
                (os.getProcessCpuTime() - process0) / 1e6, (pool.getAsLong() - pool0) / 1e6);
    }

    /** {@code n} calls of {@code f}: {@code invoke}, or {@code call} with the result closed. */
    private int calls(boolean keepTheResult, int n) {
        int nones = 0;
        for (int i = 0; i < n; i++) {
            if (keepTheResult) {
                try (PyObject r = f.call()) {
                    nones++;
                }
            } else if (f.invoke() == null) {
                nones++;
            }
        }
        return nones;
    }

    /** Java calls the Python function for its Java value ({@code PyObject.invoke}). */
    @Benchmark
    public Object javaCallsPython() {
        return f.invoke();
    }

    /** Java calls the Python function, keeps the result as a {@code PyObject}, and closes it. */
    @Benchmark
    public void javaCallsPythonKeepingTheResult() {
        try (PyObject r = f.call()) {
            // the result (None) is released here
        }
    }

    /** {@code f.invoke()} 1,000 times in one GIL scope. */
    @Benchmark
    @OperationsPerInvocation(1000)
    public int javaCallsPythonInScope() {
        return py.withGil(() -> calls(false, 1000));
    }

    /** {@code f.call()} kept as a {@code PyObject} and closed, 1,000 times in one GIL scope. */
    @Benchmark
    @OperationsPerInvocation(1000)
    public int javaCallsPythonKeepingTheResultInScope() {
        return py.withGil(() -> calls(true, 1000));
    }

    /**
     * {@code f.invoke()} from a virtual thread, 1,000 per thread started: each call hops to one of
     * the runtime's platform threads and back (the start and join, about 20 µs, spread over 1,000
     * calls). The hop's cost is this minus {@link #javaCallsPython}; the {@code [in-fork]} line
     * times both back to back.
     */
    @Benchmark
    @OperationsPerInvocation(1000)
    public int javaCallsPythonFromAVirtualThread() throws InterruptedException {
        return fromAVirtualThread(1000);
    }

    private int fromAVirtualThread(int n) throws InterruptedException {
        int[] nones = new int[1];
        Thread.ofVirtual().start(() -> nones[0] = calls(false, n)).join();
        return nones[0];
    }

    /**
     * The floor under any Java call into Python: taking and giving back the GIL with the raw C API
     * ({@code PyGILState_Ensure}/{@code Release}, the thread state kept), nothing else.
     */
    @Benchmark
    public void gilEnsureReleaseOnly() throws Throwable {
        int state = (int) ensure.invokeExact();
        release.invokeExact(state);
    }

    /** Python calls the same function 1,000 times (one Java call for the whole loop). */
    @Benchmark
    @OperationsPerInvocation(1000)
    public void pythonCallsPython() {
        try (PyObject r = loop.call()) {
            // None
        }
    }
}
