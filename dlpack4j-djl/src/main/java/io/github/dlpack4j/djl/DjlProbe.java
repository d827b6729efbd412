package io.github.dlpack4j.djl;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import io.github.dlpack4j.Tensor;
import java.lang.foreign.MemorySegment;

/**
 * The DJL check of {@code dlpack4j doctor} and the DJL rows of {@code dlpack4j bench}, run by the
 * {@code dlpack4j} command in a JVM of its own, because the command's own JVM imports torch (see
 * {@link DjlTensors#checkLibtorch()}). Not an API: its output is {@code key=value} lines that the
 * command reads.
 */
public final class DjlProbe {
    private DjlProbe() {}

    /**
     * Prints {@code status=ok|error}, {@code djl=}DJL's version, {@code libtorch=} the engine's
     * version, {@code of=view|copy} and {@code toNDArray=view|copy} (whether each shares the memory,
     * by address), or {@code error=} the reason; with {@code --time BYTES...} also
     * {@code time=BYTES,OF_NS,TO_NDARRAY_NS} per size (each call and its close, averaged over 0.2 s).
     *
     * @param args nothing, or {@code --time} and float32 sizes in bytes
     */
    public static void main(String[] args) {
        try {
            DjlTensors.checkLibtorch();
            Engine engine = Engine.getEngine("PyTorch");
            System.out.println("djl=" + Engine.getDjlVersion());
            System.out.println("libtorch=" + engine.getVersion());
            try (NDManager manager = engine.newBaseManager(); NDArray a = manager.arange(6f).reshape(2, 3)) {
                long address = MemorySegment.ofBuffer(a.toByteBuffer(true)).address();
                try (Tensor t = DjlTensors.of(a)) {
                    System.out.println("of=" + (t.dataPointer() == address ? "view" : "copy"));
                    try (NDArray back = DjlTensors.toNDArray(t, manager)) {
                        long backAddress = MemorySegment.ofBuffer(back.toByteBuffer(true)).address();
                        System.out.println("toNDArray=" + (backAddress == t.dataPointer() ? "view" : "copy"));
                    }
                }
                for (int i = 1; args.length > 0 && args[0].equals("--time") && i < args.length; i++) {
                    long bytes = Long.parseLong(args[i]);
                    System.out.println("time=" + bytes + "," + time(manager, bytes));
                }
            }
            System.out.println("status=ok");
        } catch (RuntimeException | LinkageError e) {
            System.out.println("error=" + String.valueOf(e.getMessage()).lines().findFirst().orElse("") .strip());
            System.out.println("status=error");
        }
    }

    private static String time(NDManager manager, long bytes) {
        long n = Math.max(1, bytes / Float.BYTES);
        try (NDArray a = manager.ones(new Shape(n));
             Tensor t = Tensor.zeros(io.github.dlpack4j.DataType.FLOAT32, n)) {
            double of = nsPerCall(() -> DjlTensors.of(a).close());
            double to = nsPerCall(() -> DjlTensors.toNDArray(t, manager).close());
            return Math.round(of) + "," + Math.round(to);
        }
    }

    private static double nsPerCall(Runnable op) {
        for (int i = 0; i < 20_000; i++) {
            op.run(); // warm up
        }
        long calls = 0;
        long start = System.nanoTime();
        long end = start + 200_000_000L;
        long now;
        do {
            for (int i = 0; i < 1000; i++) {
                op.run();
            }
            calls += 1000;
            now = System.nanoTime();
        } while (now < end);
        return (now - start) / (double) calls;
    }
}
