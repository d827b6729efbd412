package io.github.dlpack4j.bench;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.djl.DjlTensors;
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
 * {@code DjlTensors.of} + close of a one-float array while other DJL arrays are open: {@code of}
 * looks among the open arrays of every PyTorch manager for the Java buffer under a view of a
 * {@code create} array (docs/djl.md, Lifetimes), so its cost grows with their number. The open
 * arrays here are {@code create}d over Java arrays of 16 floats, in a manager of their own.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch",
        "-Dai.djl.offline=true", "-DENGINE_CACHE_DIR=target/djl-engine", "-DDJL_CACHE_DIR=target/djl-cache"})
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class DjlOpenArraysBench {
    /** DJL arrays open besides the one {@code of} is given. */
    @Param({"0", "100", "10000"})
    public int open;

    private NDManager manager;
    private NDManager others;
    private NDArray array;

    @Setup(Level.Trial)
    public void setUp() {
        manager = NDManager.newBaseManager("PyTorch");
        others = NDManager.newBaseManager("PyTorch");
        for (int i = 0; i < open; i++) {
            others.create(new float[16]);
        }
        array = manager.arange(1f);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        array.close();
        others.close();
        manager.close();
    }

    /** The array as a tensor, then closed, with {@link #open} other arrays open. */
    @Benchmark
    public long ofAndClose() {
        try (Tensor t = DjlTensors.of(array)) {
            return t.dataPointer();
        }
    }
}
