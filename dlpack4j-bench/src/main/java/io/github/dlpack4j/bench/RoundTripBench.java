package io.github.dlpack4j.bench;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
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
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Export + adopt + close of one tensor through the public API, per call (target: under 300 ns), and
 * an export handed to a C consumer that only calls its deleter (the Java side of any export).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class RoundTripBench {
    /** {@code void (*)(void*)}: how a C consumer calls the deleter. */
    private static final MethodHandle CALL_DELETER = Linker.nativeLinker().downcallHandle(
            FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
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

    /** Export as DLManagedTensorVersioned and call its deleter through the function pointer, as C does. */
    @Benchmark
    public void exportThenDeleteAsACConsumer() throws Throwable {
        MemorySegment p = Dlpack.exportVersioned(tensor);
        CALL_DELETER.invokeExact(Dlpack.deleter(), p);
    }
}
