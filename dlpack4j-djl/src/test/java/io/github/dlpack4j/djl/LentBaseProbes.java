package io.github.dlpack4j.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Views of arrays over lent memory, run in a fresh JVM under MALLOC_PERTURB_ by {@link LentBaseTest}. Each prints
 * {@code case: outcome}: {@code refused ...}, or how many of the values a tensor from {@code of} read
 * were wrong, and how many of dlpack4j's native bytes were freed while the tensor was open.
 */
public final class LentBaseProbes {
    static final int N = 1024; // 4 KiB of float32: a malloc chunk that glibc does not hand to tcache

    private LentBaseProbes() {}

    static float[] values() {
        return values(N);
    }

    static float[] values(int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = i + 0.25f;
        }
        return v;
    }

    static String wrong(Tensor t) {
        float[] v = t.toFloatArray();
        int wrong = 0;
        for (int i = 0; i < v.length; i++) {
            if (v[i] != i + 0.25f) {
                wrong++;
            }
        }
        return wrong + " of " + v.length + " values wrong (first " + v[1] + ", " + v[v.length / 2] + ")";
    }

    /** Makes the index hold every open array's buffer: a walk that finds nothing visits them all. */
    static void fillIndex(NDManager m) {
        NDArray c = m.create(new float[4]);
        NDArray cv = c.reshape(2, 2);
        c.detach();
        try {
            DjlTensors.of(cv).close();
        } catch (IllegalStateException expected) {
            // refused: the walk went over every array
        }
        cv.close();
        c.close();
    }

    /** toNDArray gives back the share of a closed array at its next calls (two earlier lends a call). */
    static void sweep(NDManager m) {
        for (int i = 0; i < 3; i++) {
            try (Tensor x = Tensor.of(new float[] {1}); NDArray y = DjlTensors.toNDArray(x, m)) {
                y.getFloat(0);
            }
        }
    }

    /**
     * A view of an array from toNDArray whose array was closed and whose share was given back: the
     * memory is freed. With the index holding the closed array's buffer (not yet collected), is it
     * refused?
     */
    static String lentBaseClosed(boolean indexed) {
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            Tensor src = Tensor.of(values());
            NDArray a = DjlTensors.toNDArray(src, m);
            NDArray v = a.reshape(32, 32);
            if (indexed) {
                fillIndex(m);
            }
            long bytes = Dlpack.nativeBytesInUse();
            a.close();
            src.close();
            sweep(m);
            long freed = bytes - Dlpack.nativeBytesInUse();
            Tensor t;
            try {
                t = DjlTensors.of(v);
            } catch (IllegalStateException e) {
                return "refused " + e.getMessage().substring(0, 60) + "... (freed " + freed + " bytes before of)";
            }
            String r = "ACCEPTED, freed " + freed + " bytes before of; " + wrong(t);
            t.close();
            v.close();
            return r;
        }
    }

    /**
     * The same, with the source tensor still open when of() runs and closed after: of() accepts the
     * view, and holds what?
     */
    static String lentBaseClosedSourceClosedAfter() {
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            Tensor src = Tensor.of(values());
            NDArray a = DjlTensors.toNDArray(src, m);
            NDArray v = a.reshape(32, 32);
            fillIndex(m);
            a.close();
            sweep(m);
            Tensor t;
            try {
                t = DjlTensors.of(v);
            } catch (IllegalStateException e) {
                src.close();
                return "refused " + e.getMessage().substring(0, 60);
            }
            long bytes = Dlpack.nativeBytesInUse();
            src.close(); // the user's own tensor: of()'s tensor should hold the memory
            long freed = bytes - Dlpack.nativeBytesInUse();
            String r = "ACCEPTED, then src.close() freed " + freed + " bytes under the open tensor; " + wrong(t);
            t.close();
            v.close();
            return r;
        }
    }

    /** An array over memory an Arena owns (create(segment.asByteBuffer())): of() holds the buffer, not the arena. */
    static String arenaBuffer() {
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            Arena arena = Arena.ofShared();
            MemorySegment s = arena.allocate((long) N * Float.BYTES, 64);
            ByteBuffer b = s.asByteBuffer().order(ByteOrder.nativeOrder());
            b.asFloatBuffer().put(values());
            NDArray a = m.create(b, new Shape(N), DataType.FLOAT32);
            Tensor t = DjlTensors.of(a);
            a.close();
            arena.close();
            String r = "accepted; after the array and the arena closed: " + wrong(t);
            t.close();
            return r;
        }
    }

    static final java.lang.management.BufferPoolMXBean DIRECT = java.lang.management.ManagementFactory
            .getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class).stream()
            .filter(b -> b.getName().equals("direct")).findFirst().orElseThrow();

    /**
     * Correct use: a view of an OPEN create() array, its base closed after of() (allowed by the
     * docs). But the index still maps the address the base's buffer got to the buffer of an earlier
     * toNDArray array (closed, its share given back, its memory freed, the ByteBuffer object not yet
     * collected). malloc hands that freed memory to the new create() buffer; of() looks the storage
     * start up in the index, finds the stale toNDArray buffer (it "covers" the range), and holds it
     * instead of the real buffer. Once the create() buffer is collected the tensor reads freed memory.
     */
    static String createViewAfterAddressReuse(int n) throws InterruptedException {
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            // A tensor over malloc'd memory, freed when it is let go: as a tensor from Arrow, NumPy or ORT is.
            java.lang.foreign.Linker linker = java.lang.foreign.Linker.nativeLinker();
            java.lang.invoke.MethodHandle malloc = linker.downcallHandle(linker.defaultLookup().find("malloc").orElseThrow(),
                    java.lang.foreign.FunctionDescriptor.of(java.lang.foreign.ValueLayout.ADDRESS, java.lang.foreign.ValueLayout.JAVA_LONG));
            java.lang.invoke.MethodHandle free = linker.downcallHandle(linker.defaultLookup().find("free").orElseThrow(),
                    java.lang.foreign.FunctionDescriptor.ofVoid(java.lang.foreign.ValueLayout.ADDRESS));
            MemorySegment seg;
            try {
                seg = ((MemorySegment) malloc.invokeExact((long) n * Float.BYTES)).reinterpret((long) n * Float.BYTES);
            } catch (Throwable e) {
                throw new AssertionError(e);
            }
            MemorySegment.copy(values(n), 0, seg, java.lang.foreign.ValueLayout.JAVA_FLOAT, 0, n);
            Tensor src = Tensor.wrap(seg, 0, io.github.dlpack4j.DataType.FLOAT32, new long[] {n}, new long[] {1}, () -> {
                try {
                    free.invokeExact(seg);
                } catch (Throwable e) {
                    throw new AssertionError(e);
                }
            });
            NDArray a = DjlTensors.toNDArray(src, m);
            long stale = java.lang.foreign.MemorySegment.ofBuffer(a.toByteBuffer(true)).address();
            fillIndex(m); // a's buffer (which owns nothing) is now in the index at `stale`
            a.close();
            src.close();
            sweep(m); // a's share given back: the memory at `stale` is freed
            java.util.List<NDArray> keep = new java.util.ArrayList<>();
            NDArray base = null;
            int tries = 0;
            for (; tries < 2000 && base == null; tries++) {
                NDArray c = m.create(values(n)); // DJL: allocateDirect(n * 4) = malloc, then from_blob
                if (MemorySegment.ofBuffer(c.toByteBuffer(true)).address() == stale) {
                    base = c;
                } else {
                    keep.add(c);
                }
            }
            if (base == null) {
                StringBuilder sb = new StringBuilder();
                for (int i = 0; i < 5; i++) {
                    sb.append(Long.toHexString(MemorySegment.ofBuffer(keep.get(i).toByteBuffer(true)).address())).append(' ');
                }
                Tensor again = Tensor.zeros(io.github.dlpack4j.DataType.FLOAT32, n);
                sb.append(" stale ").append(Long.toHexString(stale)).append(" next dlpack4j tensor at ").append(Long.toHexString(again.data().address()));
                again.close();
                System.out.println("debug: " + sb);
                keep.forEach(NDArray::close);
                return "no create() buffer landed at the freed address (try again)";
            }
            NDArray v = base.reshape(n / 4, 4);
            Tensor t = DjlTensors.of(v); // base is open: this must hold base's buffer
            v.close();
            base.close(); // allowed: "The array, and its manager or scope, may be closed first: the memory stays."
            base = null;
            keep.forEach(NDArray::close);
            keep.clear();
            UseAfterFreeTest.churn(); // GC, then fill fresh 512-byte direct buffers with 0x7f
            java.util.List<ByteBuffer> fill = new java.util.ArrayList<>();
            for (int i = 0; i < 200; i++) {
                ByteBuffer b = ByteBuffer.allocateDirect(n * Float.BYTES);
                for (int j = 0; j < b.capacity(); j++) {
                    b.put(j, (byte) 0x7f);
                }
                fill.add(b);
            }
            String r = "landed after " + tries + " creates; of() accepted a view of an OPEN array; after the base "
                    + "closed and GC: " + wrong(t);
            t.close();
            return r + " (kept " + fill.size() + ")";
        }
    }

    public static void main(String[] args) throws Exception {
        for (int n : new int[] {300, 1000, 2000, 100}) {
            String r = createViewAfterAddressReuse(n);
            System.out.println("create view after address reuse " + n + ": " + r);
            if (!r.startsWith("no ")) {
                System.out.println("create view after address reuse: " + r);
                break;
            }
        }
        System.out.println("perturb: " + System.getenv("MALLOC_PERTURB_"));
        System.out.println("lent base closed not indexed: " + lentBaseClosed(false));
        System.out.println("lent base closed indexed: " + lentBaseClosed(true));
        System.out.println("lent base closed source closed after of: " + lentBaseClosedSourceClosedAfter());
        System.out.println("arena buffer: " + arenaBuffer());
    }
}
