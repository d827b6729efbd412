package io.github.dlpack4j.cli;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLPackVersion;
import io.github.dlpack4j.abi.DLTensor;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** The {@code dlpack4j} command. */
public final class Main {
    private Main() {}

    /** Entry point: {@code dlpack4j demo}. */
    public static void main(String[] args) {
        String command = args.length == 0 ? "demo" : args[0];
        switch (command) {
            case "demo" -> demo(System.out);
            default -> {
                System.err.println("usage: dlpack4j demo");
                System.exit(2);
            }
        }
    }

    /** Exports a Java tensor as a DLManagedTensorVersioned, adopts it back, and shows what is shared. */
    static void demo(PrintStream out) {
        out.println("dlpack4j demo: a Java tensor through DLPack 1.3 and back");
        out.println();
        try (Tensor original = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
            out.println("1. A Java tensor in native memory:");
            out.println(indent(original.toString()));
            out.printf("   data at 0x%x%n%n", original.dataPointer());

            MemorySegment ptr = Dlpack.exportVersioned(original);
            MemorySegment s = ptr.reinterpret(DLManagedTensorVersioned.SIZE);
            long dl = DLManagedTensorVersioned.DL_TENSOR;
            out.printf("2. Exported as DLManagedTensorVersioned* 0x%x (live exports: %d)%n", ptr.address(), Dlpack.liveExports());
            out.printf("   version %d.%d, flags %d, data 0x%x, ndim %d, deleter 0x%x%n%n",
                    s.get(ValueLayout.JAVA_INT, DLManagedTensorVersioned.VERSION + DLPackVersion.MAJOR),
                    s.get(ValueLayout.JAVA_INT, DLManagedTensorVersioned.VERSION + DLPackVersion.MINOR),
                    s.get(ValueLayout.JAVA_LONG, DLManagedTensorVersioned.FLAGS),
                    s.get(ValueLayout.JAVA_LONG, dl + DLTensor.DATA),
                    s.get(ValueLayout.JAVA_INT, dl + DLTensor.NDIM),
                    s.get(ValueLayout.ADDRESS, DLManagedTensorVersioned.DELETER).address());

            original.close();
            out.println("3. The Java owner is closed; the export keeps the memory alive.");
            out.println();

            try (ManagedTensor adopted = ManagedTensor.adoptVersioned(ptr)) {
                Tensor view = adopted.tensor();
                out.printf("4. Adopted back as %s %s, data at 0x%x (the same memory, no copy)%n",
                        view.dtype(), java.util.Arrays.toString(view.shape()), view.dataPointer());
                view.setDouble(42, 1, 2);
                out.println("   after view[1, 2] = 42 through the adopted tensor:");
                out.println(indent(view.toString()));
                out.printf("   live exports before close: %d%n", Dlpack.liveExports());
            }
            out.printf("5. Closed: the deleter ran exactly once (live exports: %d, native bytes held: %d)%n",
                    Dlpack.liveExports(), Dlpack.nativeBytesInUse());
        }
        try (Tensor t = Tensor.zeros(DataType.FLOAT8_E4M3FN, 4)) {
            t.setDouble(0.3, 1);
            out.printf("%n6. Small floats too: 0.3 stored as float8_e4m3fn reads back as %s%n", t.getDouble(1));
        }
    }

    private static String indent(String s) {
        return "   " + s.replace("\n", "\n   ");
    }
}
