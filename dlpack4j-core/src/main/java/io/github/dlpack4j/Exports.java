package io.github.dlpack4j;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.github.dlpack4j.abi.DLDataType;
import io.github.dlpack4j.abi.DLDevice;
import io.github.dlpack4j.abi.DLManagedTensor;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLPackVersion;
import io.github.dlpack4j.abi.DLTensor;
import io.github.dlpack4j.internal.Trampoline;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * Java tensors handed out as managed structs, and the one deleter that takes them back.
 *
 * <p>An export is a block holding the managed struct followed by its shape and strides arrays:
 * a fresh {@code malloc}ed one whose record (holding one reference to the tensor memory) sits in a
 * registry slot, or, for a tensor exported more than once, a block of its {@link ExportPool},
 * registered for as long as the pool lives. {@code manager_ctx} carries the slot number, never a Java
 * object address. The deleter is a single function for the process, a {@link Trampoline} to an upcall
 * stub in the global arena: a consumer may call it at any time, on any thread, late, also after the
 * JVM is gone (it does nothing then).
 */
final class Exports {
    /** What a registry slot holds: a one-off export, or a block of an {@link ExportPool}. */
    sealed interface Live permits Export, ExportPool.Block {
        /** The managed struct's address. */
        long address();
    }

    private record Export(long address, MemoryOwner memory, long blockSize, boolean versioned) implements Live {}

    private static final ExportRegistry<Live> LIVE = new ExportRegistry<>();

    private static final Trampoline DELETER_FUNCTION;
    /** {@code void deleter(DLManagedTensor[Versioned]* self)}: the same for both ABIs. */
    static final MemorySegment DELETER;

    static {
        try {
            // self as JAVA_LONG, passed as a pointer is on every 64-bit platform the linker supports:
            // an ADDRESS parameter would be a segment object made on every call.
            DELETER_FUNCTION = Trampoline.release(MethodHandles.lookup().findStatic(Exports.class, "deleteFromNative",
                    MethodType.methodType(void.class, long.class)), FunctionDescriptor.ofVoid(JAVA_LONG));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
        DELETER = DELETER_FUNCTION.address();
    }

    private Exports() {}

    /**
     * A new managed struct for {@code t}; the memory stays allocated until its deleter runs. A
     * tensor exported more than once without extra flags takes its structs from an {@link ExportPool}.
     */
    static MemorySegment export(Tensor t, boolean versioned, long extraFlags) {
        if (t.isClosed() || (!versioned && (t.isReadOnly() || t.isSubBytePadded()))) {
            refuse(t);
        }
        if (extraFlags == 0) {
            ExportPool pool = t.exportPool(versioned);
            if (pool != null) {
                MemorySegment pooled = pool.export();
                if (pooled != null) {
                    return pooled;
                }
            }
        }
        return exportUnpooled(t, versioned, extraFlags);
    }

    /** Why {@code t} cannot be exported (closed, or read-only or padded data for the legacy ABI). */
    private static void refuse(Tensor t) {
        if (t.isClosed()) {
            throw new IllegalStateException("cannot export a closed tensor");
        }
        if (t.isReadOnly()) {
            throw new DlpackException("a read-only tensor cannot be exported through the legacy ABI, which has no "
                    + "READ_ONLY flag: a consumer would write to it (export it versioned, or copy() it)");
        }
        throw new DlpackException("padded sub-byte " + t.dtype()
                + " data needs the IS_SUBBYTE_TYPE_PADDED flag, which only the versioned ABI carries");
    }

    /** A fresh {@code malloc}ed export, registered until its deleter runs. */
    private static MemorySegment exportUnpooled(Tensor t, boolean versioned, long extraFlags) {
        int ndim = t.ndim();
        long head = versioned ? DLManagedTensorVersioned.SIZE : DLManagedTensor.SIZE;
        long blockSize = head + 16L * ndim;
        MemoryOwner memory = t.memory();
        memory.retain();
        MemorySegment block;
        try {
            block = NativeMemory.malloc(blockSize);
        } catch (Throwable e) {
            memory.release();
            throw e;
        }
        // Everything but manager_ctx is written before the record is registered, the deleter above all:
        // abandonAll, which NULLs deleters, sees the record only after these writes.
        long dl;
        if (versioned) {
            block.set(JAVA_INT, DLManagedTensorVersioned.VERSION + DLPackVersion.MAJOR, DlpackVersion.MAJOR);
            block.set(JAVA_INT, DLManagedTensorVersioned.VERSION + DLPackVersion.MINOR, DlpackVersion.MINOR);
            block.set(ADDRESS, DLManagedTensorVersioned.DELETER, DELETER);
            long flags = extraFlags | t.flags();
            block.set(JAVA_LONG, DLManagedTensorVersioned.FLAGS, flags);
            dl = DLManagedTensorVersioned.DL_TENSOR;
        } else {
            block.set(ADDRESS, DLManagedTensor.DELETER, DELETER);
            dl = DLManagedTensor.DL_TENSOR;
        }
        // DLPack asks for NULL data in a tensor without elements.
        writeTensor(block, dl, head, t.numel() == 0 ? 0L : memory.base.address() + t.offset(), t.device(), t.dtype(),
                t.shapeArray(), t.stridesArray());
        Export record = new Export(block.address(), memory, blockSize, versioned);
        int slot;
        try {
            slot = LIVE.add(record);
        } catch (RuntimeException | Error e) {
            NativeMemory.free(block, blockSize);
            memory.release();
            throw e;
        }
        block.set(JAVA_LONG, versioned ? DLManagedTensorVersioned.MANAGER_CTX : DLManagedTensor.MANAGER_CTX, slot);
        if (abandoned && LIVE.remove(slot, record)) {
            // Made while (or after) the process let go of its exports. Had abandonAll claimed the
            // record first, it wrote the NULL itself, after the deleter above.
            block.set(ADDRESS, versioned ? DLManagedTensorVersioned.DELETER : DLManagedTensor.DELETER, MemorySegment.NULL);
        }
        return block;
    }

    /**
     * Writes the {@code DLTensor} at offset {@code dl} of {@code block}, with its shape and then its
     * strides at offset {@code shapeAt} of the same block.
     */
    static void writeTensor(MemorySegment block, long dl, long shapeAt, long data, Device device, DataType dtype,
                            long[] shape, long[] strides) {
        int ndim = shape.length;
        long stridesAt = shapeAt + 8L * ndim;
        for (int i = 0; i < ndim; i++) {
            block.set(JAVA_LONG, shapeAt + 8L * i, shape[i]);
            block.set(JAVA_LONG, stridesAt + 8L * i, strides[i]);
        }
        block.set(JAVA_LONG, dl + DLTensor.DATA, data);
        block.set(JAVA_INT, dl + DLTensor.DEVICE + DLDevice.DEVICE_TYPE, device.type().code());
        block.set(JAVA_INT, dl + DLTensor.DEVICE + DLDevice.DEVICE_ID, device.id());
        block.set(JAVA_INT, dl + DLTensor.NDIM, ndim);
        block.set(JAVA_BYTE, dl + DLTensor.DTYPE + DLDataType.CODE, (byte) dtype.code().code());
        block.set(JAVA_BYTE, dl + DLTensor.DTYPE + DLDataType.BITS, (byte) dtype.bits());
        block.set(JAVA_SHORT, dl + DLTensor.DTYPE + DLDataType.LANES, (short) dtype.lanes());
        block.set(JAVA_LONG, dl + DLTensor.SHAPE, block.address() + shapeAt);
        block.set(JAVA_LONG, dl + DLTensor.STRIDES, block.address() + stridesAt);
        block.set(JAVA_LONG, dl + DLTensor.BYTE_OFFSET, 0L);
    }

    /** Registers a pool block for good (until {@link #unregister}); returns its slot. */
    static int register(ExportPool.Block block) {
        return LIVE.add(block);
    }

    static void unregister(int slot, ExportPool.Block block) {
        LIVE.remove(slot, block);
    }

    static boolean isAbandoned() {
        return abandoned;
    }

    /** Set once by {@link #abandonAll}: exports made from then on are abandoned as they are made. */
    private static volatile boolean abandoned;

    /** Takes {@code e} out of the registry and, if this call did, makes its deleter NULL. */
    private static boolean abandon(int slot, Live live) {
        if (live instanceof ExportPool.Block b) {
            return b.abandon();
        }
        Export e = (Export) live;
        if (!LIVE.remove(slot, e)) {
            return false; // its deleter ran meanwhile and freed the block
        }
        NativeMemory.at(e.address(), e.blockSize()).set(ADDRESS,
                e.versioned() ? DLManagedTensorVersioned.DELETER : DLManagedTensor.DELETER, MemorySegment.NULL);
        return true;
    }

    /** The upcall: never lets anything escape into C, which would kill the JVM. */
    private static void deleteFromNative(long self) {
        try {
            delete(self);
        } catch (Throwable t) {
            try {
                System.err.println("dlpack4j: error in the DLPack deleter: " + t);
            } catch (Throwable ignored) {
                // Nothing more can be done inside a deleter.
            }
        }
    }

    /**
     * Releases the export at {@code address}: frees the struct and drops its hold on the memory.
     * An address that is not a live export (a consumer calling the deleter twice) is ignored.
     */
    static void delete(long address) {
        // One deleter serves both ABIs, whose manager_ctx sits at different offsets: take the
        // candidate whose slot holds a record of this very struct.
        long slot = NativeMemory.word(address + DLManagedTensorVersioned.MANAGER_CTX);
        Live live = recordAt(slot, address);
        if (live == null) {
            slot = NativeMemory.word(address + DLManagedTensor.MANAGER_CTX);
            live = recordAt(slot, address);
        }
        if (live instanceof ExportPool.Block b) {
            b.delete(); // back to its pool; a second call is ignored there
        } else if (live instanceof Export e && LIVE.remove((int) slot, e)) {
            NativeMemory.free(NativeMemory.at(address, e.blockSize()), e.blockSize());
            e.memory().release();
        }
        // Otherwise not a live export of ours (a consumer calling the deleter twice): nothing to free.
    }

    private static Live recordAt(long slot, long address) {
        Live e = LIVE.get(slot);
        return e != null && e.address() == address ? e : null;
    }

    /**
     * Makes sure that no consumer's call of a deleter reaches the JVM from now on, for every export
     * live or made later; the exports' memory is leaked. Returns how many were live.
     *
     * <p>Where the deleter is a {@link Trampoline}, it is turned off: every struct keeps a deleter
     * that stays a valid function and returns at once. (A NULL written into the struct would not do:
     * jaxlib checks the deleter for NULL when it imports, and calls whatever the struct says when its
     * array dies.)
     * Elsewhere, the deleter of every live export, and of every export made afterwards, becomes NULL,
     * which consumers that read it when they delete skip. Each record is taken out of the registry
     * first, so a deleter running at the same time frees its block or this writes to it, never both.
     */
    static int abandonAll() {
        if (Trampoline.outlivesTheJvm()) {
            DELETER_FUNCTION.disarm();
            return liveCount();
        }
        abandoned = true;
        int[] n = {0};
        LIVE.forEach((e, slot) -> {
            if (abandon(slot, e)) {
                n[0]++;
            }
        });
        return n[0];
    }

    static boolean isOurDeleter(long fn) {
        return fn == DELETER.address();
    }

    /** Exports whose deleter has not run (pool blocks that are out included, abandoned ones not). */
    static int liveCount() {
        int[] n = {0};
        LIVE.forEach((e, slot) -> {
            if (!(e instanceof ExportPool.Block b) || b.isOut()) {
                n[0]++;
            }
        });
        return n[0];
    }
}
