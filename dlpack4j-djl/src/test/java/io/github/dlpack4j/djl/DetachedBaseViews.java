package io.github.dlpack4j.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.dlpack4j.Tensor;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A fresh JVM for {@link DetachedViewTest}, started under glibc's {@code MALLOC_PERTURB_} (freed
 * heap memory is overwritten): a view ({@code reshape}, {@code get}) of a {@code create()} array
 * that was {@code detach()}ed from its manager, given to {@code of}; the array and the view closed,
 * the Java buffer under them collected; the tensor read {@value #READS} times. Prints
 * {@code perturb: } the variable, then one line per case: {@code refused MESSAGE}, or
 * {@code WRONG of READ values wrong}.
 */
public final class DetachedBaseViews {
    static final int N = 4096;
    static final int READS = 1000;
    private static final BufferPoolMXBean DIRECT = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)
            .stream().filter(b -> b.getName().equals("direct")).findFirst().orElseThrow();

    private DetachedBaseViews() {}

    public static void main(String[] args) throws InterruptedException {
        System.out.println("perturb: " + System.getenv("MALLOC_PERTURB_"));
        for (boolean overArray : new boolean[] {true, false}) {
            for (boolean reshape : new boolean[] {true, false}) {
                String name = (overArray ? "array " : "buffer ") + (reshape ? "reshape" : "get");
                System.out.println(name + ": " + readAfterFree(overArray, reshape));
            }
        }
    }

    private static float value(int i) {
        return i + 0.25f;
    }

    /** The case: a base made by {@code create(float[])} or over a direct buffer, a view of all of it or of a part. */
    private static String readAfterFree(boolean overArray, boolean reshape) throws InterruptedException {
        float[] values = new float[N];
        for (int i = 0; i < N; i++) {
            values[i] = value(i);
        }
        int from = reshape ? 0 : N / 4;
        long buffers = DIRECT.getCount();
        Tensor t;
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            NDArray base;
            if (overArray) {
                base = m.create(values); // over a direct buffer of DJL's
            } else {
                ByteBuffer b = ByteBuffer.allocateDirect(N * Float.BYTES).order(ByteOrder.nativeOrder());
                b.asFloatBuffer().put(values);
                base = m.create(b, new Shape(N), DataType.FLOAT32);
            }
            base.detach();
            NDArray view = reshape ? base.reshape(64, 64) : base.get(from + ":");
            try {
                t = DjlTensors.of(view);
            } catch (IllegalStateException e) {
                return "refused " + e.getMessage();
            } finally {
                view.close();
                base.close();
            }
        }
        for (int i = 0; i < 500 && DIRECT.getCount() > buffers; i++) {
            System.gc();
            Thread.sleep(10);
        }
        if (DIRECT.getCount() > buffers) {
            t.close();
            return "the buffer was not collected";
        }
        long wrong = 0;
        for (int r = 0; r < READS; r++) {
            float[] v = t.toFloatArray();
            for (int i = 0; i < v.length; i++) {
                if (v[i] != value(from + i)) {
                    wrong++;
                }
            }
        }
        long read = READS * t.numel();
        t.close();
        return wrong + " of " + read + " values wrong";
    }
}
