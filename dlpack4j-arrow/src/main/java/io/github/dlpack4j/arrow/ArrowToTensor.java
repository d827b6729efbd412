package io.github.dlpack4j.arrow;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.internal.RowMajor;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.ReferenceManager;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.ExtensionTypeVector;

/**
 * Arrow vector to tensor: the tensor views the leaf vector's data buffer and holds one Arrow
 * reference to it ({@code ReferenceManager.retain}), given back ({@code release}) when the tensor
 * and every DLPack export of it are gone. The vector, or its allocator, may go first: Arrow keeps the
 * memory while the reference is held, and reports it as a leak if its allocator is closed meanwhile.
 */
final class ArrowToTensor {
    /** The element shape and strides of a vector of one value per row; never written ({@link #of} copies them). */
    private static final long[] NO_DIMS = {};
    private static final List<Long> ONE_PER_ROW = List.of(1L);

    private ArrowToTensor() {}

    /**
     * The shape of a vector's data: each row is {@code rowElements} values of {@code dtype} in the
     * leaf's data buffer, laid out by {@code elementShape} and {@code elementStrides}.
     *
     * @param levels the vector and each list's values down to the leaf, each with a validity bitmap
     * @param perRow how many entries of the matching level's bitmap belong to one row
     */
    record Layout(FieldVector leaf, DataType dtype, long rowElements, long[] elementShape, long[] elementStrides,
                  List<FieldVector> levels, List<Long> perRow) {}

    static Tensor of(FieldVector vector, long fromRow, long rows, NullPolicy nulls) {
        int count = vector.getValueCount();
        if (fromRow < 0 || rows < 0 || fromRow > count - rows) {
            throw new IndexOutOfBoundsException("rows [" + fromRow + ", " + fromRow + " + " + rows + ") are outside the "
                    + count + " rows of '" + vector.getName() + "'");
        }
        Layout l = layout(vector);
        if (nulls == NullPolicy.REFUSE) {
            refuseNulls(vector.getName(), l, fromRow, rows);
        }
        ArrowBuf data = l.leaf().getDataBuffer();
        long rowBytes = l.rowElements() * l.dtype().byteSize();
        long start = fromRow * rowBytes;
        long bytes = rows * rowBytes;
        if (start + bytes > data.capacity()) {
            throw new IllegalArgumentException("the data buffer of '" + l.leaf().getName() + "' holds " + data.capacity()
                    + " bytes, fewer than the " + (start + bytes) + " its rows need");
        }
        long[] shape = new long[l.elementShape().length + 1];
        long[] strides = new long[shape.length];
        shape[0] = rows;
        strides[0] = l.rowElements();
        System.arraycopy(l.elementShape(), 0, shape, 1, l.elementShape().length);
        System.arraycopy(l.elementStrides(), 0, strides, 1, l.elementStrides().length);
        ReferenceManager ref = data.getReferenceManager();
        ref.retain(); // the tensor's own reference; the vector may release its own first
        try {
            return Tensor.wrap(Validity.EVERYTHING.asSlice(data.memoryAddress() + start, bytes), 0, l.dtype(), shape,
                    strides, ref::release);
        } catch (RuntimeException | Error e) {
            ref.release();
            throw e;
        }
    }

    /** The layout of {@code vector}, or an {@link IllegalArgumentException} saying why it has none. */
    static Layout layout(FieldVector vector) {
        FixedShapeTensor fixedShape = FixedShapeTensor.of(vector.getField());
        FieldVector v = vector instanceof ExtensionTypeVector<?> e ? e.getUnderlyingVector() : vector;
        if (fixedShape == null && !(v instanceof FixedSizeListVector)) {
            // One value per row, the common case, in a method small enough for C2 to inline into
            // of(), where escape analysis then removes the Layout (see listLayout).
            return new Layout(v, ArrowTypes.dtypeOf(v), 1, NO_DIMS, NO_DIMS, List.of(v), ONE_PER_ROW);
        }
        return listLayout(vector, v, fixedShape);
    }

    /**
     * The layout of a {@code FixedSizeList} column, {@code v} (an extension vector's storage, or the
     * vector itself): one dimension per level of lists. Apart from {@link #layout} so that that one
     * stays under C2's inlining limit for a hot method (325 bytes of bytecode): the lists and the
     * stream it once built for every vector cost 256 bytes a call on the heap, 624 per
     * {@code of} + close of a primitive vector where 368 are the tensor's own.
     */
    private static Layout listLayout(FieldVector vector, FieldVector v, FixedShapeTensor fixedShape) {
        List<FieldVector> levels = new ArrayList<>(2);
        List<Long> perRow = new ArrayList<>(2);
        List<Long> dims = new ArrayList<>(1);
        long rowElements = 1;
        levels.add(v);
        perRow.add(1L);
        while (v instanceof FixedSizeListVector list) {
            dims.add((long) list.getListSize());
            rowElements = Math.multiplyExact(rowElements, list.getListSize());
            v = list.getDataVector();
            levels.add(v);
            perRow.add(rowElements);
        }
        DataType dtype = ArrowTypes.dtypeOf(v);
        long[] shape = new long[dims.size()];
        for (int d = 0; d < shape.length; d++) {
            shape[d] = dims.get(d);
        }
        long[] strides;
        if (fixedShape != null) {
            if (shape.length != 1) {
                throw new IllegalArgumentException(FixedShapeTensor.NAME + " '" + vector.getName()
                        + "' must be stored as one FixedSizeList of values, not " + shape.length + " nested lists");
            }
            fixedShape.checkStorage(shape[0], vector.getName());
            shape = fixedShape.logicalShape();
            strides = fixedShape.logicalStrides();
        } else {
            strides = RowMajor.strides(shape);
        }
        return new Layout(v, dtype, rowElements, shape, strides, levels, perRow);
    }

    private static void refuseNulls(String name, Layout l, long fromRow, long rows) {
        long count = 0;
        long firstRow = Long.MAX_VALUE;
        for (int k = 0; k < l.levels().size(); k++) {
            FieldVector level = l.levels().get(k);
            if (!level.getField().isNullable()) {
                continue; // the schema promises no nulls: Arrow's own contract, and no bitmap to read
            }
            long per = l.perRow().get(k);
            Validity.Nulls n = Validity.nulls(level.getValidityBuffer(), fromRow * per, (fromRow + rows) * per,
                    level.getName());
            count += n.count();
            if (n.count() > 0) {
                firstRow = Math.min(firstRow, n.first() / per);
            }
        }
        if (count > 0) {
            throw new IllegalArgumentException("'" + name + "' has " + count + (count == 1 ? " null" : " nulls")
                    + " in rows [" + fromRow + ", " + (fromRow + rows) + "), the first in row " + firstRow
                    + "; a tensor has no nulls: fill them, or pass NullPolicy.ACCEPT if the values under them are "
                    + "meaningful");
        }
    }
}
