package io.github.dlpack4j.bench;

import io.github.dlpack4j.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.FloatBuffer;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Summing 16 M float32 elements: a Java {@code float[]} (the baseline) against a contiguous
 * {@link Tensor} read through its public typed views (target: at least 0.8x the array's speed).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class SumBench {
    private static final int N = 16 * 1024 * 1024;
    private float[] array;
    private Tensor tensor;

    @Setup(Level.Trial)
    public void setUp() {
        array = new float[N];
        for (int i = 0; i < N; i++) {
            array[i] = (i % 1000) * 0.001f;
        }
        tensor = Tensor.of(array);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        tensor.close();
    }

    @Benchmark
    public float javaArray() {
        float[] a = array;
        float s = 0;
        for (int i = 0; i < a.length; i++) {
            s += a[i];
        }
        return s;
    }

    @Benchmark
    public float tensorSegment() {
        MemorySegment seg = tensor.asSegment(float.class);
        long n = seg.byteSize() / 4;
        float s = 0;
        for (long i = 0; i < n; i++) {
            s += seg.getAtIndex(ValueLayout.JAVA_FLOAT, i);
        }
        return s;
    }

    @Benchmark
    public float tensorFloatBuffer() {
        FloatBuffer b = tensor.asBuffer(FloatBuffer.class);
        int n = b.limit();
        float s = 0;
        for (int i = 0; i < n; i++) {
            s += b.get(i);
        }
        return s;
    }
}
