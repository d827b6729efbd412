package io.github.dlpack4j.djl;

import ai.djl.ndarray.BaseNDManager;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDResource;
import ai.djl.pytorch.engine.PtNDArray;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The Java direct buffers under DJL's arrays. {@code NDManager.create(float[])},
 * {@code create(directBuffer)} and {@code NDArray.set(buffer)} give libtorch a direct
 * {@code ByteBuffer} ({@code from_blob}, no deleter) that only the array's private field
 * {@code PtNDArray.dataRef} keeps reachable, until the array is closed; a libtorch view of such an
 * array ({@code reshape}, {@code get}) has no {@code dataRef} at all, but the same storage, which
 * starts where the buffer does. So {@link NDArrayToTensor} keeps the buffer itself: the array's
 * own, or the one that starts where the array's storage does, looked up by that address in an
 * index of the buffers of open arrays. A storage not in the index has the index filled by one walk
 * over every array of every open PyTorch manager ({@code BaseNDManager.resources}, and
 * {@code tempResources} for arrays {@code tempAttach}ed to it), so that the views of one array
 * cost one walk between them, however many arrays are open; the index forgets a buffer once it was
 * collected. Both fields are read by reflection, on the class path where DJL's PyTorch engine
 * runs; without them (another DJL version) {@link #available()} is false and every array is copied.
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
    /** The buffers of open arrays seen by a walk, by the address they start at. */
    private static final ConcurrentHashMap<Long, Indexed> BY_START = new ConcurrentHashMap<>();
    /** Where the index's references go once their buffer was collected. */
    private static final ReferenceQueue<ByteBuffer> COLLECTED = new ReferenceQueue<>();

    /** A buffer in the index: weakly, so that the index keeps no memory allocated. */
    private static final class Indexed extends WeakReference<ByteBuffer> {
        final long start;

        Indexed(ByteBuffer b, long start) {
            super(b, COLLECTED);
            this.start = start;
        }
    }

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
     * {@return the direct buffer that keeps {@code [address, address + bytes)} allocated, given that
     * it is in a storage that starts at {@code storageStart} and frees nothing: {@code a}'s own, or
     * that of an open array over the same storage; null if no open array of any PyTorch manager
     * holds such a buffer (the array it came from was detached from its manager, or closed)}
     */
    static ByteBuffer holding(PtNDArray a, long storageStart, long address, long bytes) {
        ByteBuffer own = covering((ByteBuffer) DATA_REF.get(a), address, bytes);
        if (own != null) {
            return own;
        }
        for (Reference<? extends ByteBuffer> r; (r = COLLECTED.poll()) != null; ) {
            BY_START.remove(((Indexed) r).start, r);
        }
        Indexed known = BY_START.get(storageStart);
        ByteBuffer b = known == null ? null : covering(known.get(), address, bytes);
        return b != null ? b : walk(a.getManager(), storageStart, address, bytes);
    }

    /**
     * Indexes the buffers of every array of every open PyTorch manager, from the root of
     * {@code from}'s, until one that starts at {@code start} covers {@code [address, address + bytes)}.
     *
     * @return that buffer, or null if none does
     */
    private static ByteBuffer walk(NDManager from, long start, long address, long bytes) {
        NDManager root = from;
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
                    ByteBuffer b = covering(visit(r, start, managers), address, bytes);
                    if (b != null) {
                        return b;
                    }
                }
            }
            Map<?, ?> temporary = (Map<?, ?>) TEMP_RESOURCES.get(m);
            if (temporary != null) {
                for (Object r : temporary.values()) {
                    ByteBuffer b = covering(visit(TEMP_RESOURCE.get(r), start, managers), address, bytes);
                    if (b != null) {
                        return b;
                    }
                }
            }
        }
        return null;
    }

    /**
     * Indexes the buffer of {@code r} if it is an array, or queues it if it is a manager.
     *
     * @return the array's buffer if it starts at {@code start}, else null
     */
    private static ByteBuffer visit(Object r, long start, ArrayDeque<BaseNDManager> managers) {
        if (r instanceof PtNDArray p && DATA_REF.get(p) instanceof ByteBuffer b && ownsItsMemory(b)) {
            long at = start(b);
            Indexed known = BY_START.get(at);
            ByteBuffer k = known == null ? null : known.get();
            // The largest buffer at a start: a slice of an array's buffer can start where it does.
            if (k == null || (k != b && k.capacity() < b.capacity())) {
                BY_START.put(at, new Indexed(b, at));
            }
            return at == start ? b : null;
        }
        if (r instanceof BaseNDManager m) {
            managers.add(m);
        }
        return null;
    }

    /** {@return the address libtorch has for {@code b}: its base, whatever its position} */
    private static long start(ByteBuffer b) {
        return MemorySegment.ofBuffer(b).address() - b.position();
    }

    /**
     * {@return whether holding {@code b} keeps its memory allocated} Not so for a buffer over memory
     * it does not own, such as the one {@code toNDArray} gives DJL (made from an address: its
     * segment's scope is the global one), whose memory goes when the tensor under it is released
     * (that array's share is held through {@code shareOf} instead). Such a buffer in the index could
     * outlive its memory, and its address be reused by another array's.
     */
    private static boolean ownsItsMemory(ByteBuffer b) {
        return b.isDirect() && !MemorySegment.ofBuffer(b).scope().equals(MemorySegment.NULL.scope());
    }

    private static ByteBuffer covering(ByteBuffer b, long address, long bytes) {
        if (b == null || !ownsItsMemory(b)) {
            return null;
        }
        long start = start(b);
        return start <= address && address - start <= b.capacity() - bytes ? b : null;
    }
}
