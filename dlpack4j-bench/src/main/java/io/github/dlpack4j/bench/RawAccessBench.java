package io.github.dlpack4j.bench;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.arrow.ArrowTensors;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.Float4Vector;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * Reading an imported tensor's memory: import, one read, close, 256 float32 values, from numpy
 * (DLPack's Python protocol), torch (the C Exchange API) and an Arrow vector, in a JVM with 1 or 200
 * more platform threads parked. The read is an element ({@code getDouble}, the baseline), the raw
 * segment of {@code data()} (a shared arena, whose close is a handshake with every thread), or
 * {@code withData} (a confined one for the call). Target: {@code withData} at most 100 ns over the
 * baseline, with 1 and with 200 threads. Python imports run 1,000 to a GIL scope. The
 * {@code [in-fork]} line gives the three timed in turns in one process.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class RawAccessBench {
    private static final int N = 256;
    private static final int BATCH = 1000;

    @Param({"numpy", "torch", "arrow"})
    public String source;

    @Param({"1", "200"})
    public int parkedThreads;

    private Python py;
    private PyObject array;
    private BufferAllocator allocator;
    private Float4Vector vector;
    private final List<Thread> parked = new ArrayList<>();
    private final CountDownLatch end = new CountDownLatch(1);

    private static final ToDoubleFunction<Tensor> ELEMENT = t -> t.getDouble(N - 1);
    private static final ToDoubleFunction<Tensor> DATA = t -> t.data().get(JAVA_FLOAT, 4L * (N - 1));
    private static final ToDoubleFunction<Tensor> WITH_DATA = t -> t.withData(s -> s.get(JAVA_FLOAT, 4L * (N - 1)));

    @Setup(Level.Trial)
    public void setUp() {
        for (int i = 0; i < parkedThreads; i++) {
            parked.add(Thread.ofPlatform().daemon().start(() -> {
                try {
                    end.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
        }
        if (source.equals("arrow")) {
            allocator = new RootAllocator();
            vector = new Float4Vector("x", allocator);
            vector.allocateNew(N);
            for (int i = 0; i < N; i++) {
                vector.set(i, i + 1);
            }
            vector.setValueCount(N);
        } else {
            py = Python.start();
            py.exec("import numpy, torch");
            array = py.eval(source.equals("numpy")
                    ? "numpy.arange(1, %d + 1, dtype=numpy.float32)".formatted(N)
                    : "torch.arange(1, %d + 1, dtype=torch.float32)".formatted(N));
        }
    }

    /** {@link #BATCH} imports, each read once by {@code read} and closed; Python's in one GIL scope. */
    private double batch(ToDoubleFunction<Tensor> read) {
        if (vector != null) {
            double sum = 0;
            for (int i = 0; i < BATCH; i++) {
                try (Tensor t = ArrowTensors.of(vector)) {
                    sum += read.applyAsDouble(t);
                }
            }
            return sum;
        }
        return py.withGil(() -> {
            double sum = 0;
            for (int i = 0; i < BATCH; i++) {
                try (ManagedTensor m = PythonDlpack.fromDlpack(array)) {
                    sum += read.applyAsDouble(m.tensor());
                }
            }
            return sum;
        });
    }

    /** The baseline: import, {@code getDouble} of one element, close. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public double importGetDoubleClose() {
        return batch(ELEMENT);
    }

    /** Import, one read through {@code data()}'s segment, close (a shared arena closed). */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public double importDataClose() {
        return batch(DATA);
    }

    /** Import, one read inside {@code withData}, close. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public double importWithDataClose() {
        return batch(WITH_DATA);
    }

    /** The three timed in turns in this process (an {@code [in-fork]} line), then everything closed. */
    @TearDown(Level.Trial)
    public void tearDown(BenchmarkParams params) {
        if (params.getBenchmark().endsWith(".importWithDataClose")) {
            Callable<?> element = () -> batch(ELEMENT);
            Callable<?> data = () -> batch(DATA);
            Callable<?> withData = () -> batch(WITH_DATA);
            double[] ns = InFork.nanosPerCall(5, 200, element, data, withData);
            System.out.printf("%n[in-fork] rawAccess %s, %d parked threads: import+getDouble+close %.0f ns, "
                            + "import+data()+close %.0f ns (+%.0f), import+withData+close %.0f ns (+%.0f ns)%n",
                    source, parkedThreads, ns[0] / BATCH, ns[1] / BATCH, (ns[1] - ns[0]) / BATCH, ns[2] / BATCH,
                    (ns[2] - ns[0]) / BATCH);
        }
        end.countDown();
        if (array != null) {
            array.close();
        }
        if (vector != null) {
            vector.close();
            allocator.close();
        }
    }
}
