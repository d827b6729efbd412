package io.github.dlpack4j.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDManager;
import io.github.dlpack4j.DeviceType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.internal.SafetyNet;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Cleaner;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Tensor to NDArray. The PyTorch engine makes an array over a direct {@code ByteBuffer} with
 * libtorch's {@code from_blob} (no copy, no deleter) and keeps the buffer in the array until the
 * array is closed; DJL has no hook for that close. So the array holds a {@link Tensor#share()} of
 * the tensor in two ways, and the first to let go closes it:
 * <ul>
 *   <li>the buffer: core's safety net closes the share once the buffer is unreachable, that is once
 *       the array was closed (or collected) and nothing else keeps the buffer;</li>
 *   <li>the manager: one resource per manager, {@link Lends}, closes at the manager's close every
 *       array still attached to it and gives their shares back (an array detached from the manager
 *       keeps its share through its buffer alone).</li>
 * </ul>
 * And each call looks at two of the manager's earlier lends and gives back those whose arrays are
 * closed, so that a loop of arrays made and closed releases each at the next call, without the
 * garbage collector. Nothing here takes the manager's lock after the first array a manager gets.
 */
final class TensorToNDArray {
    /** Shares held for arrays: what the tests check for leaks. */
    static final LongAdder LENT = new LongAdder();
    /** The lends of each open manager that has had one (managers compare by identity). */
    private static final ConcurrentHashMap<NDManager, Lends> BY_MANAGER = new ConcurrentHashMap<>();
    /**
     * The open lends by the address their memory starts at, then the order they were made in: an
     * array that libtorch derives from a lend's array as a view ({@code reshape}, {@code get}) is
     * over memory inside the lend's range, and has nothing else to find it by.
     */
    private static final ConcurrentSkipListMap<Key, Lent> BY_ADDRESS = new ConcurrentSkipListMap<>();
    /** The most bytes a lend has held: no lend that starts further below an address reaches it. */
    private static final AtomicLong LONGEST = new AtomicLong();
    private static final AtomicLong SEQUENCE = new AtomicLong();

    /** A lend's place in {@link #BY_ADDRESS}. */
    private record Key(long start, long seq) implements Comparable<Key> {
        @Override
        public int compareTo(Key o) {
            int c = Long.compareUnsigned(start, o.start);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    private TensorToNDArray() {}

    static NDArray toNDArray(Tensor t, NDManager manager) {
        if (!(manager instanceof PtNDManager)) {
            throw new IllegalArgumentException("the manager is of DJL's " + manager.getEngine().getEngineName()
                    + " engine; dlpack4j-djl makes PyTorch arrays: pass a PyTorch NDManager "
                    + "(Engine.getEngine(\"PyTorch\").newBaseManager())");
        }
        if (!Device.cpu().equals(manager.getDevice())) {
            throw new IllegalArgumentException("the manager is on " + manager.getDevice() + "; dlpack4j-djl makes "
                    + "arrays over CPU memory: pass a manager on the CPU (NDManager.newBaseManager(Device.cpu(), "
                    + "\"PyTorch\"), or manager.newSubManager(Device.cpu())) and move the array with toDevice after");
        }
        if (t.device().type() != DeviceType.CPU) {
            throw new IllegalArgumentException("the tensor is on " + t.device() + "; dlpack4j-djl shares CPU memory only: "
                    + "copy it to the CPU first");
        }
        ai.djl.ndarray.types.DataType dtype = DjlTypes.toDjl(t.dtype());
        if (!t.isContiguous()) {
            throw new IllegalArgumentException("the tensor is not contiguous (strides " + Arrays.toString(t.strides())
                    + " for shape " + Arrays.toString(t.shape()) + "); a DJL array over memory is row-major: "
                    + "pass copy() of it");
        }
        if (t.isReadOnly()) {
            throw new IllegalArgumentException("the tensor is read-only and DJL arrays are writable: pass copy() of it");
        }
        long bytes = NDArrayToTensor.checkedBytes(t.numel(), t.dtype(), "the tensor");
        Shape shape = new Shape(t.shape());
        if (bytes == 0) {
            return manager.create(shape, dtype); // no memory to share
        }
        Lends lends = BY_MANAGER.computeIfAbsent(manager, Lends::attach);
        lends.sweep();
        Lent lent = new Lent(t.share());
        NDArray array;
        try {
            ByteBuffer buffer = MemorySegment.ofAddress(lent.share.dataPointer()).reinterpret(bytes).asByteBuffer()
                    .order(ByteOrder.nativeOrder());
            lent.net = SafetyNet.register(buffer, lent::close); // the array holds this very buffer until it is closed
            array = manager.create(buffer, shape, dtype);
        } catch (RuntimeException | Error e) {
            lent.close();
            throw e;
        }
        lent.array = new WeakReference<>(array); // weak: a detached array, never closed, may be collected
        lent.key = new Key(lent.share.dataPointer(), SEQUENCE.incrementAndGet());
        lent.end = lent.share.dataPointer() + bytes;
        LONGEST.accumulateAndGet(bytes, Math::max);
        BY_ADDRESS.put(lent.key, lent);
        lends.add(lent);
        if (lent.isClosed()) {
            BY_ADDRESS.remove(lent.key); // released meanwhile
        }
        return array;
    }

    /**
     * {@return a share of the tensor of an open lend whose memory holds {@code [address, address +
     * bytes)}, or null if none does} What {@link NDArrayToTensor#of} holds beside its libtorch alias
     * for an array that {@link #toNDArray} made, or a libtorch view of one: the alias keeps
     * libtorch's storage, which does not own this memory.
     *
     * @throws IllegalStateException if only lends given back already held that memory: the array
     *                               it came from was closed, and a view of it must not be read
     */
    static Tensor shareOf(long address, long bytes) {
        long longest = LONGEST.get();
        boolean given = false;
        for (Lent lent : BY_ADDRESS.headMap(new Key(address, Long.MAX_VALUE), true).descendingMap().values()) {
            if (address - lent.key.start >= longest) {
                break; // every lend below starts too far down to reach the address
            }
            if (address - lent.key.start <= lent.end - lent.key.start - bytes) {
                try {
                    return lent.share.share();
                } catch (IllegalStateException closedMeanwhile) {
                    given = true;
                }
            }
        }
        if (given) {
            throw new IllegalStateException("the array is over memory that an array from toNDArray lent, and that "
                    + "array is closed: close views before the array they came from, or duplicate() them");
        }
        return null;
    }

    /** The lends of one manager, attached to it once: its close closes their arrays and shares. */
    private static final class Lends implements AutoCloseable {
        private final NDManager manager;
        /** Every lend not yet found closed; in the order {@link #sweep} looks at them. */
        private final ConcurrentLinkedQueue<Lent> lents = new ConcurrentLinkedQueue<>();

        private Lends(NDManager manager) {
            this.manager = manager;
        }

        static Lends attach(NDManager manager) {
            Lends lends = new Lends(manager);
            manager.attachInternal("dlpack4j-lends", lends);
            return lends;
        }

        void add(Lent lent) {
            lents.add(lent);
        }

        /**
         * Gives back the shares of arrays closed since the last look, two lends a call: an array made
         * and closed in a loop is found at the next call, before the garbage collector would have
         * to find its buffer (a phantom reference to process, which cost more than the call itself).
         */
        void sweep() {
            for (int i = 0; i < 2; i++) {
                Lent lent = lents.poll();
                if (lent == null) {
                    return;
                }
                if (lent.isReleased()) {
                    lent.close();
                } else if (!lent.isClosed()) {
                    lents.add(lent);
                }
            }
        }

        /** Run by the manager's close, in any order with its arrays' own closes. */
        @Override
        public void close() {
            BY_MANAGER.remove(manager, this);
            for (Lent lent : lents) {
                NDArray a = lent.array == null ? null : lent.array.get();
                if (a != null && a.getManager() == manager) {
                    a.close(); // the manager closes it anyway; first, so that the share can go
                }
                if (lent.isReleased()) {
                    lent.close();
                }
            }
        }
    }

    /**
     * The share an array holds, closed exactly once by whichever of its two holds lets go first. It
     * reaches the array weakly: the safety net's action holds the lend, and an action that reached
     * the array would reach the buffer it watches (the array's {@code dataRef}), which would then
     * never be collected.
     */
    private static final class Lent implements AutoCloseable {
        private final Tensor share;
        private final AtomicBoolean open = new AtomicBoolean(true);
        WeakReference<NDArray> array;
        Cleaner.Cleanable net;
        Key key;
        long end;

        Lent(Tensor share) {
            this.share = share;
            LENT.increment();
        }

        boolean isClosed() {
            return !open.get();
        }

        /** {@return whether the array was closed, or collected} */
        boolean isReleased() {
            NDArray a = array == null ? null : array.get();
            return a == null || a.isReleased();
        }

        @Override
        public void close() {
            if (open.compareAndSet(true, false)) {
                LENT.decrement();
                if (key != null) {
                    BY_ADDRESS.remove(key);
                }
                share.close();
                if (net != null) {
                    net.clean(); // from the manager's close: the safety net has nothing left to do
                }
            }
        }
    }
}
