package example;

import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * Java tensors handed to a C library as {@code DLManagedTensorVersioned*}: the C side reads the
 * values and calls the deleter, which hands the memory back to Java.
 */
public final class CConsumer {
    private CConsumer() {}

    public static void main(String[] args) throws Throwable {
        Path library = Path.of(args.length > 0 ? args[0] : "target/libconsumer.so").toAbsolutePath();
        try (Arena arena = Arena.ofConfined()) {
            MethodHandle consumeSum = Linker.nativeLinker().downcallHandle(
                    SymbolLookup.libraryLookup(library, arena).findOrThrow("consume_sum"),
                    FunctionDescriptor.of(ValueLayout.JAVA_DOUBLE, ValueLayout.ADDRESS));
            float[] values = new float[12];
            for (int i = 0; i < values.length; i++) {
                values[i] = i + 1;
            }
            try (Tensor x = Tensor.of(values, 3, 4)) {
                MemorySegment whole = Dlpack.exportVersioned(x);
                System.out.printf("exported 0x%x (data 0x%x), live exports %d%n", whole.address(), x.dataPointer(),
                        Dlpack.liveExports());
                System.out.printf("C sum of [3, 4]: %.1f%n", (double) consumeSum.invokeExact(whole));
                // a strided view: column 1 of every row, x[:, 1]; C follows the strides
                MemorySegment column = Dlpack.exportVersioned(x.select(1, 1));
                System.out.printf("C sum of x[:, 1]: %.1f%n", (double) consumeSum.invokeExact(column));
            }
            System.out.printf("after C called the deleters: live exports %d, native bytes %d%n", Dlpack.liveExports(),
                    Dlpack.nativeBytesInUse());
        }
    }
}
