package io.github.dlpack4j.bench;

import io.github.dlpack4j.Tensor;
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

/**
 * Python consuming a Java tensor ({@code dlpack4j.Tensor} from {@code PythonDlpack.toPython}) against
 * the same consumer taking an ndarray, per call, both in Python loops of 1,000 calls run from JMH,
 * and both timed again with {@code timeit} in the same interpreter and run (after the measurement,
 * once the Java side is compiled): {@code numpy.from_dlpack}
 * (target: Java at most 1.5x the ndarray) and {@code torch.from_dlpack} (target: at most 1.2x). Each
 * call makes a fresh export and capsule; the consumer's result is dropped at once, so the export's
 * deleter runs inside the timing too.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class ExportBench {
    private Python python;
    private Tensor tensor;
    private PyObject numpyJava;
    private PyObject numpyNdarray;
    private PyObject torchJava;
    private PyObject torchNdarray;

    @Setup(Level.Trial)
    public void setUp() {
        Python py = Python.start();
        tensor = Tensor.of(new double[] {1});
        try (PyObject j = PythonDlpack.toPython(tensor)) {
            py.setGlobal("j", j);
        }
        py.exec("""
                import numpy as np, torch, timeit
                a = np.ones(1)
                def loop(consume, obj):
                    def run():
                        for _ in range(1000):
                            consume(obj)
                    return run
                numpy_java, numpy_ndarray = loop(np.from_dlpack, j), loop(np.from_dlpack, a)
                torch_java, torch_ndarray = loop(torch.from_dlpack, j), loop(torch.from_dlpack, a)
                def best(stmt, n=100_000):
                    return min(timeit.repeat(stmt, globals=globals(), number=n, repeat=5)) / n * 1e9
                """);
        python = py;
        numpyJava = py.getGlobal("numpy_java");
        numpyNdarray = py.getGlobal("numpy_ndarray");
        torchJava = py.getGlobal("torch_java");
        torchNdarray = py.getGlobal("torch_ndarray");
    }

    /** The timeit baselines, after the measurement, so that the Java side is compiled by then. */
    @TearDown(Level.Trial)
    public void tearDown() {
        try (PyObject t = python.eval("[best('np.from_dlpack(j)'), best('np.from_dlpack(a)'), "
                + "best('torch.from_dlpack(j)', 20_000), best('torch.from_dlpack(a)', 20_000)]")) {
            java.util.List<?> ns = (java.util.List<?>) t.toJava();
            System.out.printf("%n[in-fork] timeit: numpy.from_dlpack(java) %.1f ns, numpy.from_dlpack(ndarray) %.1f ns (%.2fx); "
                    + "torch.from_dlpack(java) %.1f ns, torch.from_dlpack(ndarray) %.1f ns (%.2fx)%n",
                    ns.get(0), ns.get(1), (Double) ns.get(0) / (Double) ns.get(1),
                    ns.get(2), ns.get(3), (Double) ns.get(2) / (Double) ns.get(3));
        }
        for (PyObject o : new PyObject[] {numpyJava, numpyNdarray, torchJava, torchNdarray}) {
            o.close();
        }
        tensor.close();
    }

    private static void run(PyObject loop) {
        try (PyObject r = loop.call()) {
            // None
        }
    }

    /** {@code numpy.from_dlpack(java_tensor)}, 1,000 times in a Python loop. */
    @Benchmark
    @OperationsPerInvocation(1000)
    public void numpyFromJavaTensor() {
        run(numpyJava);
    }

    /** {@code numpy.from_dlpack(ndarray)}, 1,000 times in a Python loop. */
    @Benchmark
    @OperationsPerInvocation(1000)
    public void numpyFromNdarray() {
        run(numpyNdarray);
    }

    /** {@code torch.from_dlpack(java_tensor)}, 1,000 times in a Python loop. */
    @Benchmark
    @OperationsPerInvocation(1000)
    public void torchFromJavaTensor() {
        run(torchJava);
    }

    /** {@code torch.from_dlpack(ndarray)}, 1,000 times in a Python loop. */
    @Benchmark
    @OperationsPerInvocation(1000)
    public void torchFromNdarray() {
        run(torchNdarray);
    }
}
