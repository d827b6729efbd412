package io.github.dlpack4j;

import io.github.dlpack4j.internal.TensorDeleter;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Reference;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * A foreign {@code DLManagedTensor} or {@code DLManagedTensorVersioned} adopted by Java: a zero-copy
 * {@link Tensor} over the producer's memory, and the duty to call the producer's deleter.
 *
 * <p>Adoption validates every field before use (see {@link #adoptVersioned}); if one is wrong, the
 * deleter is called at once and a {@link DlpackException} names the field. Afterwards:
 * <ul>
 *   <li>{@link #tensor()} reads and writes the producer's memory directly; a {@code READ_ONLY}
 *       producer gives a read-only tensor;</li>
 *   <li>{@link #close()} calls the producer's deleter exactly once, from whatever thread closes, and
 *       makes every view unusable ({@link IllegalStateException}, never a crash). If the tensor was
 *       exported again meanwhile, the deleter runs when that export is deleted too;</li>
 *   <li>a {@code ManagedTensor} that is never closed is closed by a {@code Cleaner} once it and all
 *       its views are unreachable;</li>
 *   <li>{@link #intoDeleter()} hands the duty to an {@link AllocationDeleter}, for a container that
 *       keeps the data pointer and metadata itself.</li>
 * </ul>
 *
 * <p>For example, with a pointer a producer handed over:
 * {@snippet :
 * MemorySegment ptr = Dlpack.exportVersioned(Tensor.of(new double[] {1, 2, 3}));  // any producer's pointer
 * try (ManagedTensor m = ManagedTensor.adoptVersioned(ptr)) {   // every field validated
 *     double last = m.tensor().getDouble(2);                    // 3.0, the producer's memory
 * }                                                             // the producer's deleter, exactly once
 * }
 */
public final class ManagedTensor implements AutoCloseable {
    private final boolean versioned;
    private final DlpackVersion version;
    private final long flags;
    private final Tensor tensor;
    /** Runs the deleter on the releasing thread as it is. */
    private static final Executor DIRECT = Runnable::run;

    private ManagedTensor(boolean versioned, DlpackVersion version, long flags, Tensor tensor) {
        this.versioned = versioned;
        this.version = version;
        this.flags = flags;
        this.tensor = tensor;
    }

    /**
     * Adopts a {@code DLManagedTensorVersioned*}: takes ownership of it whether or not this succeeds.
     *
     * @param ptr the producer's struct; its deleter runs once the returned handle is closed and
     *            every export of its tensor was deleted
     * @return a handle that owns the struct and gives its {@link #tensor()}
     * @throws DlpackException if a field breaks DLPack 1.x (major version other than 1, negative or
     *                         huge ndim, negative extents, overflowing shape or strides, NULL data with
     *                         elements, unknown dtype or device, undefined flags); the deleter has run
     * @throws NullPointerException if {@code ptr} is NULL; there is no deleter to call then
     */
    public static ManagedTensor adoptVersioned(MemorySegment ptr) {
        return adopt(ptr, true, DIRECT);
    }

    /**
     * Adopts a {@code DLManagedTensorVersioned*} whose deleter must run in a context: {@code deleterContext}
     * is given the deleter call when it is due (once), and must run it exactly once, holding a lock or
     * Python's GIL for example, before returning or later (views are unusable from the moment it is
     * given, whenever it runs).
     *
     * @param ptr            the producer's struct, validated and owned as by {@link #adoptVersioned(MemorySegment)}
     * @param deleterContext runs the deleter call it is given, exactly once
     * @return a handle that owns the struct and gives its {@link #tensor()}
     * @throws DlpackException      if a field breaks DLPack 1.x; the deleter has been handed to
     *                              {@code deleterContext}
     * @throws NullPointerException if {@code ptr} is NULL
     */
    public static ManagedTensor adoptVersioned(MemorySegment ptr, Executor deleterContext) {
        return adopt(ptr, true, deleterContext);
    }

    /**
     * Adopts a legacy {@code DLManagedTensor*} (DLPack before 1.0: no version, no flags), with the
     * same validation and ownership rules as {@link #adoptVersioned}.
     *
     * @param ptr the producer's legacy struct; owned from this call on, as in {@link #adoptVersioned}
     * @return a handle that owns the struct and gives its {@link #tensor()}
     * @throws DlpackException      if a field breaks DLPack; the deleter has run
     * @throws NullPointerException if {@code ptr} is NULL
     */
    public static ManagedTensor adoptLegacy(MemorySegment ptr) {
        return adopt(ptr, false, DIRECT);
    }

    /**
     * {@link #adoptLegacy(MemorySegment)} with a context for the deleter, as {@link #adoptVersioned(MemorySegment, Executor)}.
     *
     * @param ptr            the producer's legacy struct, owned from this call on
     * @param deleterContext runs the deleter call it is given, exactly once
     * @return a handle that owns the struct and gives its {@link #tensor()}
     * @throws DlpackException      if a field breaks DLPack; the deleter has been handed to
     *                              {@code deleterContext}
     * @throws NullPointerException if {@code ptr} is NULL
     */
    public static ManagedTensor adoptLegacy(MemorySegment ptr, Executor deleterContext) {
        return adopt(ptr, false, deleterContext);
    }

    private static ManagedTensor adopt(MemorySegment ptr, boolean versioned, Executor deleterContext) {
        Objects.requireNonNull(ptr, "ptr");
        if (ptr.address() == 0) {
            throw new NullPointerException("managed tensor pointer is NULL");
        }
        // Nothing can be read from (so no deleter called for) a pointer that cannot be a struct.
        long p = ptr.address();
        ForeignTensor.checkPointer(p, 8, "managed tensor pointer");
        long deleter = ForeignTensor.deleterOf(p, versioned);
        DeleterCall release = new DeleterCall(deleter, p, deleterContext);
        try {
            return ForeignTensor.read(p, versioned, release);
        } catch (RuntimeException e) {
            // Only validation throws one, before adopted() gives release to a holder (the Cleaner):
            // adopted() builds from validated fields (a known dtype, a shape whose product fits), so
            // nothing else can run the deleter and it runs here exactly once.
            release.free();
            throw e instanceof DlpackException ? e : new DlpackException("malformed managed tensor: " + e, e);
        }
    }

    /**
     * The handle over validated fields ({@link ForeignTensor#read}), owning {@code release}: the
     * memory's only holder, released by {@link #close()} or by the {@code Cleaner}.
     *
     * @param start  address of the lowest reachable byte
     * @param length number of reachable bytes
     * @param offset bytes from {@code start} to element [0, ..., 0]
     * @param numel  the product of {@code shape}
     */
    static ManagedTensor adopted(boolean versioned, DlpackVersion version, long flags, DeleterCall release,
                                 Device device, DataType dtype, long[] shape, long[] strides, long start, long length,
                                 long offset, boolean padded, long numel) {
        long bytes = numel * dtype.byteSize(); // (a broadcast tensor's may not fit: saturated)
        release.tensorBytes = Math.multiplyHigh(numel, dtype.byteSize()) == 0 && bytes >= 0 ? bytes : Long.MAX_VALUE;
        MemoryOwner memory = MemoryOwner.create(NativeMemory.at(start, length), release);
        TensorHandle handle = new TensorHandle(memory.ownerHold());
        boolean readOnly = (flags & DlpackFlags.READ_ONLY) != 0;
        Tensor view = new Tensor(memory, handle, false, offset, shape, strides, dtype, device, readOnly, padded, numel);
        return new ManagedTensor(versioned, version, flags, view);
    }

    /**
     * The adopted memory's counts, its release and the producer's deleter call in one object, so that
     * adoption allocates one: freeing the memory ({@link #free()}, once) hands it to the deleter
     * context (unless that is {@link #DIRECT}: then it calls the deleter at once), and the context's
     * run of it calls the deleter, ours directly, without a trip through C. Before the hand-over,
     * {@link #run()} is the cleaning action of the owner's hold; the hand-over comes only after that
     * hold was released (it frees the memory), so the safety net never runs it afterwards, and the
     * deleter runs exactly once.
     */
    static final class DeleterCall extends MemoryOwner.Lifetime implements TensorDeleter {
        private final long deleter;
        private final long self;
        private final Executor context;
        /** Written before the hand-over, which happens-before the context runs it (Executor's contract). */
        private boolean handedOver;
        /** Set once validated ({@link #adopted}); 0 for a refused struct. */
        private long tensorBytes;

        DeleterCall(long deleter, long self, Executor context) {
            super(null, false);
            this.deleter = deleter;
            this.self = self;
            this.context = context;
        }

        @Override
        void free() {
            if (context == DIRECT) {
                callDeleter();
            } else {
                handedOver = true;
                context.execute(this);
            }
        }

        @Override
        public long tensorBytes() {
            return tensorBytes;
        }

        /** The owner's hold released before the hand-over; the deleter call, run by the context, after it. */
        @Override
        public void run() {
            if (handedOver) {
                callDeleter();
            } else {
                super.run();
            }
        }

        private void callDeleter() {
            if (Exports.isOurDeleter(deleter)) {
                Exports.delete(self);
            } else if (deleter != 0) {
                NativeMemory.callVoidFunction(MemorySegment.ofAddress(deleter), MemorySegment.ofAddress(self));
            }
        }
    }

    /**
     * The zero-copy tensor over the producer's memory.
     *
     * @return the same view on every call; not owning, so closing it does not release the struct
     * @throws IllegalStateException after {@link #close()} or {@link #intoDeleter()}
     */
    public Tensor tensor() {
        if (tensor.handle().isMoved()) {
            throw new IllegalStateException("ownership was moved to an AllocationDeleter");
        }
        if (tensor.isClosed()) {
            throw new IllegalStateException("managed tensor is closed");
        }
        return tensor;
    }

    /** {@return whether the struct was a {@code DLManagedTensorVersioned}} */
    public boolean isVersioned() {
        return versioned;
    }

    /** {@return the producer's DLPack version; {@code 0.0} for a legacy struct, which carries none} */
    public DlpackVersion version() {
        return version;
    }

    /** {@return the producer's {@link DlpackFlags}; 0 for a legacy struct} */
    public long flags() {
        return flags;
    }

    /**
     * Moves the duty to call the producer's deleter into an {@link AllocationDeleter}, for a
     * container that adopts the data pointer and metadata read from {@link #tensor()}. This handle
     * becomes unusable; tensors already taken from it stay valid until the deleter runs.
     *
     * @return the new owner of the deleter call; closing it runs the deleter (or lets the last export do so)
     * @throws IllegalStateException if closed or moved already
     */
    public AllocationDeleter intoDeleter() {
        // Open, then moved or closed: one compare-and-set on the handle, so close and this cannot both win.
        if (tensor.isClosed() || !tensor.handle().move()) {
            throw new IllegalStateException("managed tensor is closed or was moved already");
        }
        return new AllocationDeleter(tensor.handle(), tensor.memory());
    }

    /**
     * Calls the producer's deleter (once every export of this tensor is deleted too) and makes every
     * view unusable. Idempotent, from any thread; does nothing after {@link #intoDeleter()}.
     */
    @Override
    public void close() {
        tensor.handle().closeUnlessMoved();
        Reference.reachabilityFence(this); // keeps the watched memory reachable: the deleter runs here
    }

    @Override
    public String toString() {
        return "ManagedTensor(" + (versioned ? "versioned " + version : "legacy") + ", flags="
                + DlpackFlags.toString(flags) + ", " + tensor + ")";
    }
}
