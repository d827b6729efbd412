package io.github.dlpack4j;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.dlpack4j.abi.DLManagedTensor;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLPackVersion;
import io.github.dlpack4j.internal.SafetyNet;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;

/**
 * Export structs of one tensor view in one ABI, made once and handed out again and again: for a
 * tensor exported many times (a Python object that numpy or torch consumes in a loop), an export is
 * a claimed block instead of a {@code malloc}, a registry entry and a {@code free}.
 *
 * <p>Each block is registered for good (its {@code manager_ctx} is its registry slot, as for any
 * export) and has a state: {@code FREE} (in the pool), {@code OUT} (a consumer owns it),
 * {@code ORPHAN} (out when the pool closed: its deleter frees it), {@code DEAD} (freed) or
 * {@code ABANDONED} (the process let go of its exports by NULLing their deleters, where the deleter
 * is no trampoline: {@link Exports#abandonAll}). Every change is
 * a compare-and-set, so an export, its deleter, the pool closing and abandoning race safely: a block
 * is handed to one consumer at a time and freed exactly once.
 *
 * <p>Only owning tensors have pools (a view's {@code close()} does nothing, so its pool could only
 * go when the view is collected). The pool is closed, and its free blocks freed, when its tensor is
 * closed or becomes unreachable (a cleaner); it never references the tensor. It holds one reference
 * to the memory, from its making until it is closed and every block out then has come back, so that
 * an export costs no reference count of its own and the memory goes exactly when it would with
 * unpooled exports. The deleter, {@code manager_ctx}, version and flags are written once, the
 * {@code DLTensor} (data, device, shape, strides, dtype) on every export.
 */
final class ExportPool {
    /** Blocks per pool: exports out at once beyond this take the unpooled path. */
    static final int BLOCKS = 8;
    private static final int FREE = 0;
    private static final int OUT = 1;
    private static final int ORPHAN = 2;
    private static final int DEAD = 3;
    private static final int ABANDONED = 4;
    private static final VarHandle STATE;
    private static final VarHandle PENDING;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Block.class, "state", int.class);
            PENDING = MethodHandles.lookup().findVarHandle(ExportPool.class, "pending", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** One export struct, its shape and strides after it. */
    final class Block implements Exports.Live {
        final MemorySegment segment;
        /** Its registry slot, set once before the pool is published. */
        private int slot;
        @SuppressWarnings("unused") // through STATE
        private volatile int state;

        private Block(MemorySegment segment) {
            this.segment = segment;
        }

        @Override
        public long address() {
            return segment.address();
        }

        private boolean move(int from, int to) {
            return STATE.compareAndSet(this, from, to);
        }

        /** The deleter's work: back to the pool, or freed if the pool closed meanwhile. Ignores a second call. */
        void delete() {
            if (!move(OUT, FREE) && move(ORPHAN, DEAD)) {
                free(this);
                comeBack();
            }
            // Otherwise FREE, DEAD or ABANDONED: a deleter called twice, or after abandonAll.
        }

        /** For {@link Exports#abandonAll}: the deleter of a block that is out becomes NULL; none goes out again. */
        boolean abandon() {
            leaked = true; // before any block is abandoned: the pool's reference is never dropped now
            while (true) {
                int s = state;
                if (s == OUT || s == ORPHAN) {
                    if (move(s, ABANDONED)) {
                        segment.set(ADDRESS, deleterOffset, MemorySegment.NULL);
                        return true;
                    }
                } else if (s == FREE) {
                    if (move(FREE, ABANDONED)) {
                        return false;
                    }
                } else {
                    return false;
                }
            }
        }

        boolean isOut() {
            int s = state;
            return s == OUT || s == ORPHAN;
        }
    }

    private final MemoryOwner memory;
    /** Once closed: 1 (the closing itself) + the blocks out then that have not come back; the last drops the pool's reference. */
    @SuppressWarnings("unused") // through PENDING
    private volatile int pending;
    /** Set when a block is abandoned: the memory must outlive the JVM's own bookkeeping. */
    private volatile boolean leaked;
    private final Block[] blocks;
    private final long blockSize;
    private final long dl;
    private final long deleterOffset;
    private final long data;
    private final Device device;
    private final DataType dtype;
    private final long[] shape;
    private final long[] strides;
    private final Cleaner.Cleanable cleanable;

    private ExportPool(Tensor t, boolean versioned) {
        memory = t.memory();
        int ndim = t.ndim();
        long head = versioned ? DLManagedTensorVersioned.SIZE : DLManagedTensor.SIZE;
        blockSize = head + 16L * ndim;
        dl = versioned ? DLManagedTensorVersioned.DL_TENSOR : DLManagedTensor.DL_TENSOR;
        deleterOffset = versioned ? DLManagedTensorVersioned.DELETER : DLManagedTensor.DELETER;
        data = t.numel() == 0 ? 0L : memory.base.address() + t.offset(); // DLPack: NULL data without elements
        device = t.device();
        dtype = t.dtype();
        shape = t.shapeArray().clone();
        strides = t.stridesArray().clone();
        long flags = t.flags();
        blocks = new Block[BLOCKS];
        memory.retain(); // throws if the memory was released: the caller exports no more
        pending = 1; // the share closeBlocks drops
        try {
            for (int i = 0; i < BLOCKS; i++) {
                MemorySegment s = NativeMemory.malloc(blockSize);
                Block b;
                try {
                    b = new Block(s);
                    b.slot = Exports.register(b);
                } catch (RuntimeException | Error e) {
                    NativeMemory.free(s, blockSize);
                    throw e;
                }
                blocks[i] = b;
                long slot = b.slot;
                if (versioned) {
                    s.set(JAVA_INT, DLManagedTensorVersioned.VERSION + DLPackVersion.MAJOR, DlpackVersion.MAJOR);
                    s.set(JAVA_INT, DLManagedTensorVersioned.VERSION + DLPackVersion.MINOR, DlpackVersion.MINOR);
                    s.set(JAVA_LONG, DLManagedTensorVersioned.MANAGER_CTX, slot);
                    s.set(JAVA_LONG, DLManagedTensorVersioned.FLAGS, flags);
                } else {
                    s.set(JAVA_LONG, DLManagedTensor.MANAGER_CTX, slot);
                }
                s.set(ADDRESS, deleterOffset, Exports.DELETER);
            }
            cleanable = SafetyNet.register(t, this::closeBlocks);
        } catch (RuntimeException | Error e) {
            closeBlocks();
            throw e;
        }
        if (Exports.isAbandoned()) { // abandonAll ran while this pool was being made: none of it goes out
            for (Block b : blocks) {
                b.abandon();
            }
        }
    }

    /** A new pool for {@code t}'s exports in one ABI, closed with {@link #close} or once {@code t} is unreachable. */
    static ExportPool create(Tensor t, boolean versioned) {
        return new ExportPool(t, versioned);
    }

    /**
     * A pooled export of the tensor (the pool's reference keeps the memory); null if every block is out.
     */
    MemorySegment export() {
        for (Block b : blocks) {
            if (b.state == FREE && b.move(FREE, OUT)) {
                fill(b.segment);
                return b.segment;
            }
        }
        return null;
    }

    /** Writes the {@code DLTensor}: a consumer of an earlier export must not have changed what the next one reads. */
    private void fill(MemorySegment s) {
        Exports.writeTensor(s, dl, blockSize - 16L * shape.length, data, device, dtype, shape, strides);
    }

    /** Frees the blocks in the pool now; those out are freed by their deleters. Once; also run by the cleaner. */
    void close() {
        cleanable.clean();
    }

    private void closeBlocks() {
        for (Block b : blocks) {
            if (b == null) {
                continue; // the constructor failed before making it
            }
            while (true) {
                int s = b.state;
                if (s == FREE) {
                    if (b.move(FREE, DEAD)) {
                        free(b);
                        break;
                    }
                } else if (s == OUT) {
                    PENDING.getAndAdd(this, 1); // before the block can be seen as an orphan and come back
                    if (b.move(OUT, ORPHAN)) {
                        break; // its deleter frees it
                    }
                    PENDING.getAndAdd(this, -1);
                } else {
                    break; // ORPHAN, DEAD or ABANDONED: nothing left to do here
                }
            }
        }
        comeBack(); // the closing's own share
    }

    /** One share of {@code pending} is done; the last drops the pool's reference to the memory. */
    private void comeBack() {
        if ((int) PENDING.getAndAdd(this, -1) == 1 && !leaked) {
            memory.release();
        }
    }

    private void free(Block b) {
        Exports.unregister(b.slot, b);
        NativeMemory.free(b.segment, blockSize);
    }
}
