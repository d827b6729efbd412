package io.github.dlpack4j.bench;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
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
 * Export + adopt + close of one tensor through the public API, per call (target: under 300 ns).
 * The baseline is the cheapest scope FFM offers, a confined arena created and closed, for scale.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class RoundTripBench {
    private Tensor tensor;

    @Setup(Level.Trial)
    public void setUp() {
        tensor = Tensor.zeros(DataType.FLOAT32, 32, 32);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        tensor.close();
    }

    /** Export as DLManagedTensorVersioned, adopt it back, read one element, close (the deleter runs). */
    @Benchmark
    public double exportAdoptCloseVersioned() {
        try (ManagedTensor m = ManagedTensor.adoptVersioned(Dlpack.exportVersioned(tensor))) {
            return m.tensor().getDouble(0, 0);
        }
    }

    /** The same through the legacy DLManagedTensor. */
    @Benchmark
    public double exportAdoptCloseLegacy() {
        try (ManagedTensor m = ManagedTensor.adoptLegacy(Dlpack.exportLegacy(tensor))) {
            return m.tensor().getDouble(0, 0);
        }
    }
}
