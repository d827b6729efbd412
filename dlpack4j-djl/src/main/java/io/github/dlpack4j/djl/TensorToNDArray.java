package io.github.dlpack4j.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDManager;
import io.github.dlpack4j.DeviceType;
import io.github.dlpack4j.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * Tensor to NDArray. The PyTorch engine makes an array over a direct {@code ByteBuffer} with
 * libtorch's {@code from_blob} (no copy, no deleter) and keeps the buffer in the array until the
 * array is closed; DJL has no hook for that close. So the buffer is the hold: it is made over an
 * buffer registered with a {@link Cleaner} that closes a {@link Tensor#share()} of the tensor once
 * the buffer is unreachable, and the memory is
 * given back once the array is closed and the buffer collected, or when the array's manager
 * closes (a resource attached to it, which closes the array first), whichever comes first.
 */
final class TensorToNDArray {
    /** Shares held for arrays: what the tests check for leaks. */
    static final LongAdder LENT = new LongAdder();
    /** Closes a share once the buffer an array held is unreachable. */
    private static final Cleaner BUFFERS = Cleaner.create();

    private TensorToNDArray() {}

    static NDArray toNDArray(Tensor t, NDManager manager) {
        if (!(manager instanceof PtNDManager)) {
            throw new IllegalArgumentException("the manager is of DJL's " + manager.getEngine().getEngineName()
                    + " engine; dlpack4j-djl makes PyTorch arrays: pass a PyTorch NDManager "
                    + "(Engine.getEngine(\"PyTorch\").newBaseManager())");
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
        Lent lent = new Lent(t.share(), manager);
        NDArray array;
        try {
            ByteBuffer buffer = MemorySegment.ofAddress(lent.share.dataPointer()).reinterpret(bytes).asByteBuffer()
                    .order(ByteOrder.nativeOrder());
            BUFFERS.register(buffer, lent::close); // the array holds this very buffer until it is closed
            array = manager.create(buffer, shape, dtype);
        } catch (RuntimeException | Error e) {
            lent.close();
            throw e;
        }
        // Run by the manager's close, in any order with the array's own: the array is closed then,
        // unless it was detached from the manager, and then its buffer holds the share on its own.
        // The share's release takes the resource out of the manager again, so that a long-lived
        // manager does not keep one for every array made and closed.
        lent.hook = array.getUid() + "-dlpack4j";
        manager.attachInternal(lent.hook, (AutoCloseable) () -> {
            if (array.getManager() == manager) {
                array.close();
            }
            if (array.isReleased()) {
                lent.close();
            }
        });
        return array;
    }

    /** The share an array holds, closed exactly once by whichever of its two holds lets go first. */
    private static final class Lent implements AutoCloseable {
        private final Tensor share;
        private final NDManager manager;
        private final AtomicBoolean open = new AtomicBoolean(true);
        /** The id of the resource attached to the manager, once it is. */
        volatile String hook;

        Lent(Tensor share, NDManager manager) {
            this.share = share;
            this.manager = manager;
            LENT.increment();
        }

        @Override
        public void close() {
            if (open.compareAndSet(true, false)) {
                LENT.decrement();
                share.close();
                String id = hook;
                if (id != null) {
                    manager.detachInternal(id); // does nothing while the manager closes
                }
            }
        }
    }
}
