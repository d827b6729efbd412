package io.github.dlpack4j.bench;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
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
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * Import + close of a Python tensor through the public API ({@code PythonDlpack.fromDlpack}) against
 * Python's own exchange ({@code numpy.from_dlpack}) timed in the same interpreter and run, one call
 * at a time (each takes the GIL; the deleter is deferred) and 1,000 per GIL scope
 * ({@code Python.withGil}): a torch tensor (exchange-API route; target in a scope at most 0.1x
 * {@code numpy.from_dlpack(t)}), a NumPy array ({@code __dlpack__} route; targets at most 1.6x alone,
 * 1.2x in a scope, of {@code numpy.from_dlpack(a)}), and a 256 MiB array (zero-copy: the same cost
 * as one element).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class ImportBench {
    private PyObject torchTensor;
    private PyObject numpyArray;
    private PyObject bigArray;
    private PyObject loopTorch;
    private PyObject loopNumpy;
    private Python py;

    @Setup(Level.Trial)
    public void setUp() {
        py = Python.start();
        py.exec("""
                import numpy as np, torch, timeit
                t = torch.ones(1)
                a = np.ones(1)
                big = np.ones(256 * 1024 * 1024 // 8)
                def loop_torch():
                    for _ in range(1000):
                        np.from_dlpack(t)
                def loop_numpy():
                    for _ in range(1000):
                        np.from_dlpack(a)
                n = 100_000
                timeit_torch = min(timeit.repeat('np.from_dlpack(t)', globals=globals(), number=n, repeat=5)) / n * 1e9
                timeit_numpy = min(timeit.repeat('np.from_dlpack(a)', globals=globals(), number=n, repeat=5)) / n * 1e9
                """);
        torchTensor = py.getGlobal("t");
        numpyArray = py.getGlobal("a");
        bigArray = py.getGlobal("big");
        loopTorch = py.getGlobal("loop_torch");
        loopNumpy = py.getGlobal("loop_numpy");
        try (PyObject tt = py.getGlobal("timeit_torch"); PyObject tn = py.getGlobal("timeit_numpy")) {
            System.out.printf("%n[python] timeit: numpy.from_dlpack(torch tensor) %.1f ns, numpy.from_dlpack(ndarray) %.1f ns%n",
                    tt.asDouble(), tn.asDouble());
        }
    }

    /**
     * The same import timed once more after JMH's measurement, beside its Python baseline in this
     * very process: the interpreter's speed differs between JMH's forks (numpy.from_dlpack(a) took
     * 160 ns in one fork and 290 ns in the next here), so the in-fork ratio is the fairer one.
     */
    @TearDown(Level.Trial)
    public void tearDown(BenchmarkParams params) {
        String name = params.getBenchmark();
        boolean torch = name.contains("TorchTensor");
        if (name.contains(".javaImports")) {
            PyObject source = torch ? torchTensor : name.contains("256MiB") ? bigArray : numpyArray;
            boolean scoped = name.endsWith("InScope");
            long best = Long.MAX_VALUE;
            for (int round = 0; round < 5; round++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < 100; i++) {
                    if (scoped) {
                        py.withGil(() -> importAndClose(source, 1000));
                    } else {
                        importAndClose(source, 1000);
                    }
                }
                best = Math.min(best, System.nanoTime() - t0);
            }
            try (PyObject baseline = py.eval(torch ? "min(timeit.repeat('np.from_dlpack(t)', globals=globals(), "
                    + "number=20_000, repeat=5)) / 20_000 * 1e9" : "min(timeit.repeat('np.from_dlpack(a)', "
                    + "globals=globals(), number=100_000, repeat=5)) / 100_000 * 1e9")) {
                double java = best / 100_000.0;
                System.out.printf("%n[in-fork] %s: Java %.1f ns, numpy.from_dlpack(%s) %.1f ns: %.2fx%n",
                        name.substring(name.lastIndexOf('.') + 1), java, torch ? "t" : "a", baseline.asDouble(),
                        java / baseline.asDouble());
            }
        }
        for (PyObject o : new PyObject[] {torchTensor, numpyArray, bigArray, loopTorch, loopNumpy}) {
            o.close();
        }
    }

    /** Imports and closes {@code source} {@code n} times. */
    private static long importAndClose(PyObject source, int n) {
        long sum = 0;
        for (int i = 0; i < n; i++) {
            try (ManagedTensor m = PythonDlpack.fromDlpack(source)) {
                sum += m.tensor().numel();
            }
        }
        return sum;
    }

    /** A torch tensor into Java (exchange-API route) and closed. */
    @Benchmark
    public long javaImportsTorchTensor() {
        try (ManagedTensor m = PythonDlpack.fromDlpack(torchTensor)) {
            return m.tensor().numel();
        }
    }

    /** A NumPy array into Java ({@code __dlpack__} route) and closed. */
    @Benchmark
    public long javaImportsNumpyArray() {
        try (ManagedTensor m = PythonDlpack.fromDlpack(numpyArray)) {
            return m.tensor().numel();
        }
    }

    /** A 256 MiB NumPy array into Java and closed: zero-copy, so as cheap as one element. */
    @Benchmark
    public long javaImportsNumpyArrayOf256MiB() {
        try (ManagedTensor m = PythonDlpack.fromDlpack(bigArray)) {
            return m.tensor().numel();
        }
    }

    /** A torch tensor into Java and closed, 1,000 times in one GIL scope. */
    @Benchmark
    @OperationsPerInvocation(1000)
    public long javaImportsTorchTensorInScope() {
        return py.withGil(() -> importAndClose(torchTensor, 1000));
    }

    /** A NumPy array into Java and closed, 1,000 times in one GIL scope. */
    @Benchmark
    @OperationsPerInvocation(1000)
    public long javaImportsNumpyArrayInScope() {
        return py.withGil(() -> importAndClose(numpyArray, 1000));
    }

    /** Python's own {@code numpy.from_dlpack(t)} of the torch tensor, 1,000 times in a loop. */
    @Benchmark
    @OperationsPerInvocation(1000)
    public void numpyFromDlpackOfTorchTensor() {
        try (PyObject r = loopTorch.call()) {
            // None
        }
    }

    /** Python's own {@code numpy.from_dlpack(a)} of the NumPy array, 1,000 times in a loop. */
    @Benchmark
    @OperationsPerInvocation(1000)
    public void numpyFromDlpackOfNumpyArray() {
        try (PyObject r = loopNumpy.call()) {
            // None
        }
    }
}
