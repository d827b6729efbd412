package io.github.dlpack4j.bench;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.djl.DjlTensors;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * A DJL (PyTorch engine) array as a tensor ({@code DjlTensors.of} + close) and a tensor as a DJL
 * array ({@code DjlTensors.toNDArray} + close), at one float32 and at 256 MiB: both are views, so
 * they should cost the same at every size (goal: at most 2 us). Beside them, DJL's own steps
 * timed alone: the direct buffer {@code toByteBuffer(true)} gives, and {@code create} over a
 * direct buffer + close. DJL runs offline here, its libtorch
 * unpacked under target/djl-engine of the directory JMH runs in. No Python in these forks: DJL's
 * libtorch and pip's torch cannot share a process (docs/djl.md).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch",
        "-Dai.djl.offline=true", "-DENGINE_CACHE_DIR=target/djl-engine", "-DDJL_CACHE_DIR=target/djl-cache"})
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class DjlBench {
    /** float32 elements: 1 and 64 Mi (256 MiB). */
    @Param({"1", "67108864"})
    public long elements;

    private NDManager manager;
    private NDArray array;
    private Tensor tensor;
    /** A direct buffer over {@link #tensor}'s memory, for DJL's own {@code create} (the baseline). */
    private ByteBuffer buffer;

    @Setup(Level.Trial)
    public void setUp() {
        manager = NDManager.newBaseManager("PyTorch");
        array = manager.ones(new Shape(elements), DataType.FLOAT32);
        tensor = Tensor.zeros(io.github.dlpack4j.DataType.FLOAT32, elements);
        buffer = tensor.asBuffer(ByteBuffer.class);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        tensor.close();
        array.close();
        manager.close();
    }

    /** The array as a tensor over libtorch's memory (an alias of it held), then closed. */
    @Benchmark
    public long ofAndClose() {
        try (Tensor t = DjlTensors.of(array)) {
            return t.dataPointer();
        }
    }

    /** Baseline: DJL alone, the direct buffer over the array's memory that {@code of} starts from. */
    @Benchmark
    public ByteBuffer djlToByteBuffer() {
        return array.toByteBuffer(true);
    }

    /** Baseline: DJL alone, an array over a direct buffer ({@code from_blob}), then closed. */
    @Benchmark
    public boolean djlCreateAndClose() {
        NDArray a = manager.create(buffer, new Shape(elements), DataType.FLOAT32);
        a.close();
        return a.isReleased();
    }

    /** The tensor as an array over its memory ({@code from_blob}), then closed. */
    @Benchmark
    public boolean toNDArrayAndClose() {
        NDArray a = DjlTensors.toNDArray(tensor, manager);
        a.close();
        return a.isReleased();
    }
}
