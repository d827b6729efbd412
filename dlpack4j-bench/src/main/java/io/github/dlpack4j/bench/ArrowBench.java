package io.github.dlpack4j.bench;

import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.arrow.ArrowTensors;
import io.github.dlpack4j.arrow.NullPolicy;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
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
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * An Arrow {@code Float4Vector} as a tensor ({@code ArrowTensors.of} + close) from one row to
 * 256 MiB, against copying the same vector into a {@code float[]}: the zero-copy view should cost the
 * same at every size (target: at most 200 ns), the copy grows with the data. With the default
 * {@link NullPolicy#REFUSE} the validity bitmap (1 bit per value) of a nullable field is read; a
 * field declared not nullable, or {@code ACCEPT}, skips it.
 *
 * <p>The heap is fixed and touched before the run ({@code -Xms1g -Xmx1g -XX:+AlwaysPreTouch}): a
 * call allocates a few hundred bytes (the tensor's own objects), some 5 GB/s in all, and with the
 * default heap G1 kept growing it during the run (to 1.2-2.6 GB); the benchmark thread then took
 * the first page fault on each page of the new young generation, 3-6 us a page in this VM when it
 * is quiet and several times that while other builds run: up to 200,000 faults a second, 400 ns to
 * 2 us of CPU a call instead of 60-80 ns, for seconds after each growth, warm-up or not. How far
 * and how late a fork's heap grows varies from fork to fork with the machine's load (of 6 + 6 forks
 * sampled, the one-row ones grew theirs further, 1.4-2.6 GB against 1.2-1.8 GB at 64 MiB, and the
 * slowest was a one-row fork, 1.8 us a call in its first measured second), which is how one row
 * came to look slower than 64 MiB. With the heap touched first no fault comes after the start, and
 * the rows measure the calls.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
        "-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch"})
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class ArrowBench {
    /** Values: 1, 16 Mi (64 MiB) and 64 Mi (256 MiB) floats. */
    @Param({"1", "16777216", "67108864"})
    public int rows;

    private BufferAllocator allocator;
    private Float4Vector vector;
    /** The vector as a tensor, held open for the trial: {@link #dense} is made over its memory. */
    private Tensor view;
    /** The same values as a field declared not nullable (made by toVector over the vector's memory). */
    private FieldVector dense;
    private float[] target;

    @Setup(Level.Trial)
    public void setUp() {
        allocator = new RootAllocator();
        vector = new Float4Vector("values", allocator);
        vector.allocateNew(rows);
        for (int i = 0; i < rows; i++) {
            vector.set(i, i);
        }
        vector.setValueCount(rows);
        view = ArrowTensors.of(vector, 0, rows, NullPolicy.ACCEPT);
        dense = ArrowTensors.toVector(view, allocator);
        target = new float[rows];
    }

    /**
     * After the measurement, the view and the bulk copy timed once more back to back in this very
     * process (an {@code [in-fork]} line, which scripts/bench repeats under its ratios): JMH's rows
     * come from forks run minutes apart on a shared machine.
     */
    @TearDown(Level.Trial)
    public void tearDown(BenchmarkParams params) {
        if (params.getBenchmark().endsWith(".ofThenClose")) {
            double nullable = InFork.nanosPerCall(this::ofThenClose, 50);
            double notNullable = InFork.nanosPerCall(this::ofNotNullableThenClose, 50);
            double accepting = InFork.nanosPerCall(this::ofAcceptingNullsThenClose, 50);
            double copy = InFork.nanosPerCall(this::copyIntoFloatArray, 50);
            System.out.printf("%n[in-fork] arrow %d float32 values (%s): of+close %.1f ns (nullable field), %.1f ns "
                            + "(not nullable), %.1f ns (NullPolicy.ACCEPT); bulk copy into float[] %.1f ns: "
                            + "copy / of = %.0fx, %.0fx, %.0fx%n", rows,
                    rows >= 1 << 20 ? (4L * rows >> 20) + " MiB" : 4L * rows + " B", nullable, notNullable, accepting,
                    copy, copy / nullable, copy / notNullable, copy / accepting);
        }
        dense.close();
        view.close();
        vector.close();
        allocator.close();
    }

    /** The tensor over the vector, nulls refused (the validity bitmap is read), then closed. */
    @Benchmark
    public long ofThenClose() {
        try (Tensor t = ArrowTensors.of(vector)) {
            return t.dataPointer();
        }
    }

    /** The same over a field declared not nullable: its bitmap is not read. */
    @Benchmark
    public long ofNotNullableThenClose() {
        try (Tensor t = ArrowTensors.of(dense)) {
            return t.dataPointer();
        }
    }

    /** The same without reading the validity bitmap. */
    @Benchmark
    public long ofAcceptingNullsThenClose() {
        try (Tensor t = ArrowTensors.of(vector, 0, rows, NullPolicy.ACCEPT)) {
            return t.dataPointer();
        }
    }

    /** The fastest copy into a {@code float[]}: one bulk copy of the data buffer. */
    @Benchmark
    public float[] copyIntoFloatArray() {
        MemorySegment data = MemorySegment.ofAddress(vector.getDataBuffer().memoryAddress()).reinterpret(4L * rows);
        MemorySegment.copy(data, ValueLayout.JAVA_FLOAT_UNALIGNED, 0, target, 0, rows);
        return target;
    }

    /** The copy Arrow users write: {@code get(i)} per value. */
    @Benchmark
    public float[] copyIntoFloatArrayByGet() {
        for (int i = 0; i < rows; i++) {
            target[i] = vector.get(i);
        }
        return target;
    }
}
