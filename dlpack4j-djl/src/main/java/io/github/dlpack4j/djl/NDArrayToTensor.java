package io.github.dlpack4j.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDArray;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.internal.RowMajor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.LongAdder;

/**
 * NDArray to tensor. A DJL array is closed explicitly (by its owner or its manager), not counted,
 * so the tensor cannot hold the caller's array: it holds an alias of its own, a second libtorch
 * tensor over the same storage ({@code reshape} to the same shape, a view in libtorch, which counts
 * references to the storage), detached from every manager and closed when the tensor and every
 * DLPack export of it have let go. The caller may close its array, or its manager, at any time.
 * The alias is taken out of the caller's {@code NDScope} too. Libtorch's storage frees the memory
 * it allocated, which is then all there is to hold (most arrays: every result of an operator); but
 * not memory it was given ({@code from_blob}, {@link TorchArrays#storage} tells), so for that the
 * tensor also holds what does: a share of the tensor that {@code toNDArray} lent to the array, or to
 * the array a view was derived from (found by address), or the Java direct buffer that
 * {@code NDManager.create} made the array, or the array it derives from, over ({@link JavaBuffers}).
 * Given memory that neither holds (a view of an array that was detached from its manager) is
 * refused: a tensor over it would outlive it.
 */
final class NDArrayToTensor {
    /** Aliases held by open tensors (or their exports): what the tests check for leaks. */
    static final LongAdder HELD = new LongAdder();

    private NDArrayToTensor() {}

    static Tensor of(NDArray a) {
        PtNDArray p = check(a);
        DataType dtype = DjlTypes.toDlpack(a.getDataType());
        Shape shape = a.getShape();
        long[] dims = shape.getShape();
        long bytes = checkedBytes(shape.size(), dtype, "the array");
        if (bytes == 0) {
            return Tensor.zeros(dtype, dims); // no memory to share
        }
        if (!viewable(p)) {
            return copy(a, dtype, dims, bytes);
        }
        NDArray alias = a.reshape(shape);
        Tensor lender = null;
        try {
            NDScope.unregister(alias); // made in the caller's scope, if any: its close must not close our alias
            alias.detach(); // from the caller's manager: its close must not close our alias
            ByteBuffer b = alias.toByteBuffer(true); // contiguous: a direct buffer over libtorch's memory
            long address = MemorySegment.ofBuffer(b).address();
            MemorySegment memory = MemorySegment.ofAddress(address).reinterpret(bytes);
            TorchArrays.Storage storage = TorchArrays.storage((PtNDArray) alias); // ours: nobody closes it meanwhile
            // Memory libtorch was given (from_blob) it does not free, nor keep: keep what does.
            if (!storage.owned()) {
                lender = TensorToNDArray.shareOf(address, bytes); // an array over a tensor, or a view of one
            }
            ByteBuffer buffer = storage.owned() || lender != null ? null : javaBuffer(p, storage, address, bytes);
            Tensor held = lender;
            Tensor t = Tensor.wrap(memory, 0, dtype, dims, RowMajor.strides(dims), () -> release(alias, held, buffer));
            HELD.increment(); // after wrap: a wrap that throws runs no release
            return t;
        } catch (RuntimeException | Error e) {
            alias.close();
            if (lender != null) {
                lender.close();
            }
            throw e;
        }
    }

    /**
     * {@return the Java buffer that {@code p}'s memory is in} Refuses memory that no open array
     * holds a buffer of: a tensor over it would read freed memory once that buffer is collected.
     */
    private static ByteBuffer javaBuffer(PtNDArray p, TorchArrays.Storage storage, long address, long bytes) {
        ByteBuffer buffer = JavaBuffers.holding(p, storage.start(), address, bytes);
        if (buffer == null) {
            throw new IllegalStateException("the array is over memory that libtorch does not own and that no open DJL "
                    + "array holds: it is a view (reshape, get, ...) of an array that was detach()ed from its manager, "
                    + "or closed, and a tensor over it would read freed memory once that array's buffer is collected. "
                    + "Pass array.duplicate() (a copy whose memory libtorch owns), or call of while the array the "
                    + "view came from is open in a manager");
        }
        return buffer;
    }

    /** {@return whether {@link #of} views {@code a}'s memory, as opposed to copying it} */
    static boolean isView(NDArray a) {
        PtNDArray p = check(a);
        return a.size() > 0 && viewable(p);
    }

    /**
     * {@return whether {@code p} is row-major contiguous and this DJL and libtorch let what keeps
     * its memory be found} Without the second, a view could outlive a Java buffer nothing holds:
     * copy instead.
     */
    private static boolean viewable(PtNDArray p) {
        return JavaBuffers.available() && TorchArrays.canReadStorage() && TorchArrays.isContiguous(p);
    }

    private static void release(NDArray alias, Tensor lender, ByteBuffer buffer) {
        HELD.decrement();
        alias.close();
        if (lender != null) {
            lender.close();
        }
        Reference.reachabilityFence(buffer); // the Java buffer under libtorch's storage, if any, lives until now
    }

    /**
     * The one copy, for an array libtorch lays out in another order than row-major (a transpose, a
     * strided slice): its values in row-major order, through DJL, into a tensor of our own.
     */
    private static Tensor copy(NDArray a, DataType dtype, long[] dims, long bytes) {
        byte[] values = a.toByteArray();
        if (values.length != bytes) {
            throw new IllegalStateException("DJL gave " + values.length + " bytes for " + a.getShape() + " "
                    + a.getDataType() + ", not " + bytes);
        }
        Tensor t = Tensor.zeros(dtype, dims);
        t.withData(into -> {
            MemorySegment.copy(values, 0, into, ValueLayout.JAVA_BYTE, 0, values.length);
            return null;
        });
        return t;
    }

    private static PtNDArray check(NDArray a) {
        if (!(a instanceof PtNDArray p)) {
            throw new IllegalArgumentException("the array is of DJL's " + a.getManager().getEngine().getEngineName()
                    + " engine; dlpack4j-djl reads the PyTorch engine's arrays (ai.djl.pytorch:pytorch-engine): "
                    + "make it with a PyTorch NDManager, or copy it into one");
        }
        if (!a.getDevice().equals(Device.cpu())) {
            throw new IllegalArgumentException("the array is on " + a.getDevice() + "; dlpack4j-djl shares CPU memory "
                    + "only: pass a.toDevice(Device.cpu(), false)");
        }
        if (a.isSparse()) {
            throw new IllegalArgumentException("the array is sparse (" + a.getSparseFormat() + "); a tensor is dense: "
                    + "pass a.toDense()");
        }
        return p;
    }

    /**
     * The byte size of {@code numel} elements of {@code dtype}, refused above what one
     * {@code ByteBuffer} reaches (DJL's only way to the memory, both ways).
     */
    static long checkedBytes(long numel, DataType dtype, String what) {
        long bytes = Math.multiplyExact(numel, dtype.byteSize());
        if (bytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(what + " holds " + bytes + " bytes; DJL reaches memory through one "
                    + "ByteBuffer, at most " + Integer.MAX_VALUE + " bytes (2 GiB): split it along its first "
                    + "dimension (NDArray.get, Tensor.slice) and pass the parts");
        }
        return bytes;
    }
}
