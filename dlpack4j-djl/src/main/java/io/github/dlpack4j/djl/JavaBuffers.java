package io.github.dlpack4j.djl;

import ai.djl.ndarray.BaseNDManager;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDResource;
import ai.djl.pytorch.engine.PtNDArray;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The Java direct buffers under DJL's arrays. {@code NDManager.create(float[])},
 * {@code create(directBuffer)} and {@code NDArray.set(buffer)} give libtorch a direct
 * {@code ByteBuffer} ({@code from_blob}, no deleter) that only the array's private field
 * {@code PtNDArray.dataRef} keeps reachable, until the array is closed; a libtorch view of such an
 * array ({@code reshape}, {@code get}) has no {@code dataRef} at all. So {@link NDArrayToTensor}
 * keeps the buffer itself: the array's own, or that of the open array whose buffer holds the
 * memory, found among every array of every open PyTorch manager ({@code BaseNDManager.resources},
 * and {@code tempResources} for arrays {@code tempAttach}ed to it).
 * Both fields are read by reflection, on the class path where DJL's PyTorch engine runs; without
 * them (another DJL version) {@link #available()} is false and every array is copied.
 */
final class JavaBuffers {
    /** {@code PtNDArray.dataRef}, or null if this DJL has no such field. */
    private static final VarHandle DATA_REF = field(PtNDArray.class, "dataRef", ByteBuffer.class);
    /** {@code BaseNDManager.resources}, or null. */
    private static final VarHandle RESOURCES = field(BaseNDManager.class, "resources", ConcurrentHashMap.class);
    /** {@code BaseNDManager.tempResources}: arrays {@code tempAttach}ed to it are there only. */
    private static final VarHandle TEMP_RESOURCES = field(BaseNDManager.class, "tempResources", ConcurrentHashMap.class);
    /** {@code BaseNDManager.TempResource.resource}. */
    private static final VarHandle TEMP_RESOURCE = field(nested(BaseNDManager.class, "TempResource"), "resource",
            NDResource.class);

    private JavaBuffers() {}

    private static Class<?> nested(Class<?> outer, String name) {
        try {
            return Class.forName(outer.getName() + "$" + name, false, outer.getClassLoader());
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    private static VarHandle field(Class<?> owner, String name, Class<?> type) {
        if (owner == null) {
            return null;
        }
        try {
            return MethodHandles.privateLookupIn(owner, MethodHandles.lookup()).findVarHandle(owner, name, type);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /** {@return whether this DJL lets the buffers be found; if not, {@code of} copies} */
    static boolean available() {
        return DATA_REF != null && RESOURCES != null && TEMP_RESOURCES != null && TEMP_RESOURCE != null;
    }

    /**
     * {@return the direct buffer that keeps {@code [address, address + bytes)} allocated, or null if
     * no open array of {@code a}'s managers (nor {@code a}) is over such a buffer: then libtorch owns
     * the memory, or the array it came from was detached from its manager}
     */
    static ByteBuffer holding(PtNDArray a, long address, long bytes) {
        ByteBuffer own = covering((ByteBuffer) DATA_REF.get(a), address, bytes);
        if (own != null) {
            return own;
        }
        NDManager root = a.getManager();
        while (root.getParentManager() != null) {
            root = root.getParentManager();
        }
        ArrayDeque<BaseNDManager> managers = new ArrayDeque<>();
        if (root instanceof BaseNDManager m) {
            managers.add(m);
        }
        for (BaseNDManager m; (m = managers.poll()) != null; ) {
            Map<?, ?> resources = (Map<?, ?>) RESOURCES.get(m);
            if (resources != null) {
                for (Object r : resources.values()) {
                    ByteBuffer b = visit(r, address, bytes, managers);
                    if (b != null) {
                        return b;
                    }
                }
            }
            Map<?, ?> temporary = (Map<?, ?>) TEMP_RESOURCES.get(m);
            if (temporary != null) {
                for (Object r : temporary.values()) {
                    ByteBuffer b = visit(TEMP_RESOURCE.get(r), address, bytes, managers);
                    if (b != null) {
                        return b;
                    }
                }
            }
        }
        return null;
    }

    /** {@return the buffer of {@code r}, an array, if it holds the memory; a manager is queued} */
    private static ByteBuffer visit(Object r, long address, long bytes, ArrayDeque<BaseNDManager> managers) {
        if (r instanceof PtNDArray p) {
            return covering((ByteBuffer) DATA_REF.get(p), address, bytes);
        }
        if (r instanceof BaseNDManager m) {
            managers.add(m);
        }
        return null;
    }

    private static ByteBuffer covering(ByteBuffer b, long address, long bytes) {
        if (b == null || !b.isDirect()) {
            return null;
        }
        long start = MemorySegment.ofBuffer(b).address() - b.position(); // libtorch has the buffer's base address
        return start <= address && address - start <= b.capacity() - bytes ? b : null;
    }
}
