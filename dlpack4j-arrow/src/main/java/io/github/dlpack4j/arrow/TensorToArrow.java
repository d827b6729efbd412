package io.github.dlpack4j.arrow;

import io.github.dlpack4j.DeviceType;
import io.github.dlpack4j.Tensor;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.stream.IntStream;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * Tensor to Arrow vector: the tensor's memory becomes the vector's data buffer through Arrow's
 * foreign allocations ({@code BufferAllocator.wrapForeignAllocation}), accounted to the allocator.
 * The allocation holds a {@link Tensor#share()} of the tensor, closed when Arrow frees the
 * allocation (the last vector or buffer over it released), so the memory outlives the tensor's own
 * {@code close()} for as long as Arrow uses it. The validity bitmaps (one bit per value, all set) are
 * new Arrow memory: Arrow Java vectors always have one.
 */
final class TensorToArrow {
    private TensorToArrow() {}

    /** An allocation of tensor memory that Arrow frees by closing the tensor's share. */
    private static final class LentTensor extends ForeignAllocation {
        private final Tensor share;

        LentTensor(Tensor share, long bytes) {
            super(bytes, share.dataPointer());
            this.share = share;
        }

        @Override
        protected void release0() {
            share.close();
        }
    }

    static FieldVector toVector(Tensor t, BufferAllocator allocator, String name) {
        if (t.device().type() != DeviceType.CPU) {
            throw new IllegalArgumentException("the tensor is on " + t.device() + "; Arrow Java vectors live in CPU memory");
        }
        ArrowType type = ArrowTypes.arrowTypeOf(t.dtype());
        if (t.ndim() == 0) {
            throw new IllegalArgumentException("a 0-d tensor has no rows for a vector; reshape(1) it first");
        }
        long[] shape = t.shape();
        long[] strides = t.strides();
        long rows = shape[0];
        long rowElements = Arrays.stream(shape, 1, shape.length).reduce(1, Math::multiplyExact);
        int[] order = t.numel() == 0 ? IntStream.range(1, shape.length).toArray() : compactOrder(shape, strides);
        if (order == null || (rows > 1 && rowElements > 0 && strides[0] != rowElements)) {
            throw new IllegalArgumentException("the tensor is not compact (shape " + Arrays.toString(shape) + ", strides "
                    + Arrays.toString(strides) + "): a vector needs its rows one after another, each row-major or, "
                    + "from three dimensions on, in a permuted order; pass copy() of it");
        }
        if (t.isReadOnly()) {
            throw new IllegalArgumentException("the tensor is read-only and Arrow vectors are writable; pass copy() of it");
        }
        if (t.numel() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("the tensor has " + t.numel() + " values; an Arrow vector holds at most "
                    + Integer.MAX_VALUE);
        }
        Field field = field(name, type, shape, rowElements, order);
        ArrowBuf data = t.numel() == 0 ? allocator.getEmpty() : lend(t, t.numel() * t.dtype().byteSize(), allocator);
        FieldVector v = null;
        try {
            v = field.createVector(allocator);
            FieldVector leaf = v;
            if (v instanceof FixedSizeListVector list) {
                list.loadFieldBuffers(new ArrowFieldNode(rows, 0), List.of(allocator.getEmpty()));
                leaf = list.getDataVector();
            }
            // Arrow retains the buffer for the vector, and makes a validity bitmap of ones for no nulls.
            leaf.loadFieldBuffers(new ArrowFieldNode(t.numel(), 0), List.of(allocator.getEmpty(), data));
            return v;
        } catch (RuntimeException | Error e) {
            if (v != null) {
                v.close();
            }
            throw e;
        } finally {
            data.close(); // ours; the vector holds its own
        }
    }

    private static ArrowBuf lend(Tensor t, long bytes, BufferAllocator allocator) {
        Tensor share = t.share();
        try {
            return allocator.wrapForeignAllocation(new LentTensor(share, bytes));
        } catch (RuntimeException | Error e) {
            share.close(); // Arrow may have closed it already; closing twice is harmless
            throw e;
        }
    }

    /**
     * The element dimensions (1 to ndim-1) from the outermost in memory to the innermost, if they
     * are compact in that order; null otherwise. Dimensions of extent 1 may have any stride.
     */
    private static int[] compactOrder(long[] shape, long[] strides) {
        int[] order = IntStream.range(1, shape.length).boxed()
                .sorted(Comparator.comparingLong((Integer d) -> strides[d]).reversed())
                .mapToInt(Integer::intValue).toArray();
        long expected = 1;
        for (int k = order.length - 1; k >= 0; k--) {
            int d = order[k];
            if (shape[d] != 1) {
                if (strides[d] != expected) {
                    return null;
                }
                expected *= shape[d];
            }
        }
        return order;
    }

    /**
     * A primitive field for 1-d, a FixedSizeList for 2-d, and an {@code arrow.fixed_shape_tensor}
     * column (a FixedSizeList with the extension metadata) from 3-d on; not nullable, as a tensor
     * has no nulls (so that {@code ArrowTensors.of} need not read the validity bitmaps again).
     */
    private static Field field(String name, ArrowType type, long[] shape, long rowElements, int[] order) {
        Field values = new Field("item", FieldType.notNullable(type), null);
        if (shape.length == 1) {
            return new Field(name, FieldType.notNullable(type), null);
        }
        if (rowElements > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("rows of " + rowElements + " values are longer than an Arrow list can be");
        }
        ArrowType list = new ArrowType.FixedSizeList((int) rowElements);
        if (shape.length == 2) {
            return new Field(name, FieldType.notNullable(list), List.of(values));
        }
        long[] physical = new long[order.length];
        int[] permutation = new int[order.length];
        for (int k = 0; k < order.length; k++) {
            physical[k] = shape[order[k]];
            permutation[order[k] - 1] = k;
        }
        FixedShapeTensor ext = FixedShapeTensor.of(physical, permutation);
        return new Field(name, new FieldType(false, list, null, ext.fieldMetadata()), List.of(values));
    }
}
