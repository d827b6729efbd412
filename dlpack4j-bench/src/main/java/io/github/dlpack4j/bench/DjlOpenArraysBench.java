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
 * {@code DjlTensors.of} + close of a one-element array while other DJL arrays are open, which must
 * not cost more with more of them: for libtorch's own result ({@code arange}) the alias that
 * {@code of} takes is all there is to hold; for a view ({@code reshape}) of a {@code create} array,
 * the Java buffer under it is looked up by its address in an index that one walk over the open
 * arrays filled (in the warm-up). The baseline, in the same run: DJL alone making and closing the
 * alias that {@code of} holds. The open arrays are {@code create}d over Java arrays of 16 floats,
 * in a manager of their own, which holds the array that the view is of too.
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
    private NDArray created;
    private NDArray view;

    @Setup(Level.Trial)
    public void setUp() {
        manager = NDManager.newBaseManager("PyTorch");
        others = NDManager.newBaseManager("PyTorch");
        for (int i = 0; i < open; i++) {
            others.create(new float[16]);
        }
        array = manager.arange(1f);
        created = others.create(new float[] {1}); // among the open arrays, as an application's would be
        view = created.reshape(1, 1);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        view.close();
        created.close();
        array.close();
        others.close();
        manager.close();
    }

    /** Libtorch's own array as a tensor, then closed, with {@link #open} other arrays open. */
    @Benchmark
    public long ofAndClose() {
        try (Tensor t = DjlTensors.of(array)) {
            return t.dataPointer();
        }
    }

    /** A view of a {@code create} array as a tensor (holding the Java buffer), then closed. */
    @Benchmark
    public long ofViewOfCreatedAndClose() {
        try (Tensor t = DjlTensors.of(view)) {
            return t.dataPointer();
        }
    }

    /** Baseline: DJL alone, the alias that {@code of} holds ({@code reshape}, detached), then closed. */
    @Benchmark
    public boolean djlAliasAndClose() {
        NDArray alias = array.reshape(array.getShape());
        alias.detach();
        alias.close();
        return alias.isReleased();
    }
}
