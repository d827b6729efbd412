package io.github.dlpack4j.bench;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;
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

/**
 * A Java call of a no-argument Python function against the same call made by Python, in the same
 * interpreter and run (target: at most 4x). The Python figure is a
 * loop of 1,000 calls, as {@code timeit} runs it; {@code timeit} itself is printed at set-up.
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

    @Setup(Level.Trial)
    public void setUp() {
        Python py = Python.start();
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
    public void tearDown() {
        f.close();
        loop.close();
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
