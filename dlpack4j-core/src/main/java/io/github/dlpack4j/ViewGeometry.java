package io.github.dlpack4j;

import java.util.Arrays;

/**
 * The geometry of tensor views, as pure functions: where a view's element {@code [0, ..., 0]} lies
 * and how it steps through memory ({@link View}: an offset, a shape and strides), and where each
 * element lies. Nothing here allocates tensor memory or touches it, and nothing needs a
 * {@link Tensor}; {@code Tensor}'s view methods call these and build the view over their memory.
 *
 * <p>Offsets are in bytes from the start of the memory block; strides count elements, as in
 * DLPack, and may be negative or zero. Packed sub-byte data ({@code packed}: a sub-byte dtype that
 * is not padded) steps in bits instead, and an offset of it must fall on a byte.
 */
final class ViewGeometry {
    private ViewGeometry() {}

    /**
     * The geometry of one view: the byte offset of element {@code [0, ..., 0]}, the extent of each
     * dimension and the step of each dimension in elements. The arrays are the view's own (fresh,
     * never those passed in), and are not copied again.
     *
     * @param offset  byte offset of element {@code [0, ..., 0]} from the start of the memory
     * @param shape   the extent of each dimension
     * @param strides the step of each dimension in elements
     */
    record View(long offset, long[] shape, long[] strides) {}

    /** Receives each element's row-major index and position. */
    @FunctionalInterface
    interface PositionVisitor {
        /**
         * Takes one element.
         *
         * @param index    the element's number in row-major order, from 0
         * @param position its byte offset in the memory, or its bit offset for packed data
         */
        void visit(long index, long position);
    }

    // ---------------------------------------------------------------- dimensions and offsets

    /**
     * The dimension {@code dim} of an {@code ndim}-d tensor, a negative one counted from the last.
     *
     * @return {@code dim} in {@code [0, ndim)}
     * @throws IndexOutOfBoundsException if there is no such dimension
     */
    static int checkDim(int dim, int ndim) {
        int d = dim < 0 ? dim + ndim : dim;
        if (d < 0 || d >= ndim) {
            throw new IndexOutOfBoundsException("dimension " + dim + " out of range for a " + ndim + "-d tensor");
        }
        return d;
    }

    /**
     * The byte offset of index {@code index} along dimension {@code dim}, the other indices 0.
     *
     * @throws UnsupportedOperationException if {@code packed} and that element starts inside a byte
     * @throws ArithmeticException           if the offset overflows 64 bits
     */
    static long offsetOf(long offset, long[] strides, int dim, long index, DataType dtype, boolean packed) {
        long elements = Math.multiplyExact(index, strides[dim]);
        if (packed) {
            long bits = Math.multiplyExact(elements, (long) dtype.bits());
            if (bits % 8 != 0) {
                throw new UnsupportedOperationException("this view of packed " + dtype + " data would start inside a "
                        + "byte; copy() the elements first");
            }
            return offset + bits / 8;
        }
        return offset + Math.multiplyExact(elements, (long) dtype.byteSize());
    }

    /** {@code newOffset}, or {@code offset} for a view without elements: it reaches none, but stays inside the block. */
    private static View moved(long offset, long newOffset, long[] shape, long[] strides) {
        return new View(Shapes.numel(shape) == 0 ? offset : newOffset, shape, strides);
    }

    // ---------------------------------------------------------------- views

    /**
     * {@link Tensor#slice}: the indices {@code start, start+step, ...} before {@code stop} of
     * dimension {@code dim}, with Python's rules (negative indices count from the end, bounds are
     * clipped, a negative step walks backwards).
     *
     * @throws IndexOutOfBoundsException     if there is no dimension {@code dim}
     * @throws IllegalArgumentException      if {@code step} is 0
     * @throws UnsupportedOperationException if {@code packed} and the first index starts inside a byte
     * @throws ArithmeticException           if the new stride or offset overflows 64 bits
     */
    static View slice(long offset, long[] shape, long[] strides, DataType dtype, boolean packed,
                      int dim, long start, long stop, long step) {
        int d = checkDim(dim, shape.length);
        long[] r = Shapes.sliceIndices(shape[d], start, stop, step);
        long[] s = shape.clone();
        long[] st = strides.clone();
        s[d] = r[1];
        st[d] = Math.multiplyExact(strides[d], step);
        return moved(offset, offsetOf(offset, strides, d, r[0], dtype, packed), s, st);
    }

    /**
     * {@link Tensor#select}: the sub-tensor at {@code index} of dimension {@code dim}, which
     * disappears (negative {@code dim} and {@code index} count from the end).
     *
     * @throws IndexOutOfBoundsException     if there is no dimension {@code dim}, or {@code index} is outside it
     * @throws UnsupportedOperationException if {@code packed} and the sub-tensor starts inside a byte
     */
    static View select(long offset, long[] shape, long[] strides, DataType dtype, boolean packed, int dim, long index) {
        int d = checkDim(dim, shape.length);
        long i = index < 0 ? index + shape[d] : index;
        if (i < 0 || i >= shape[d]) {
            throw new IndexOutOfBoundsException("index " + index + " out of range for dimension " + d + " of extent " + shape[d]);
        }
        return moved(offset, offsetOf(offset, strides, d, i, dtype, packed), Shapes.remove(shape, d),
                Shapes.remove(strides, d));
    }

    /**
     * {@link Tensor#flip}: dimension {@code dim} in reverse order, by a negative stride from its last index.
     *
     * @throws IndexOutOfBoundsException     if there is no dimension {@code dim}
     * @throws UnsupportedOperationException if {@code packed} and the last index starts inside a byte
     */
    static View flip(long offset, long[] shape, long[] strides, DataType dtype, boolean packed, int dim) {
        int d = checkDim(dim, shape.length);
        long[] st = strides.clone();
        st[d] = -strides[d];
        return moved(offset, offsetOf(offset, strides, d, Math.max(shape[d] - 1, 0), dtype, packed), shape.clone(), st);
    }

    /**
     * {@link Tensor#permute}: the dimensions in the order {@code dims}, a permutation of
     * {@code 0..ndim-1} (negative entries counted from the last).
     *
     * @throws IllegalArgumentException  if {@code dims} has another length, or repeats a dimension
     * @throws IndexOutOfBoundsException if an entry is no dimension
     */
    static View permute(long offset, long[] shape, long[] strides, int... dims) {
        if (dims.length != shape.length) {
            throw new IllegalArgumentException("permute needs " + shape.length + " dimensions, got " + Arrays.toString(dims));
        }
        long[] s = new long[dims.length];
        long[] st = new long[dims.length];
        boolean[] seen = new boolean[dims.length];
        for (int i = 0; i < dims.length; i++) {
            int d = checkDim(dims[i], shape.length);
            if (seen[d]) {
                throw new IllegalArgumentException("repeated dimension in " + Arrays.toString(dims));
            }
            seen[d] = true;
            s[i] = shape[d];
            st[i] = strides[d];
        }
        return new View(offset, s, st);
    }

    /** {@link Tensor#transpose()}: all dimensions reversed. */
    static View transpose(long offset, long[] shape, long[] strides) {
        int[] dims = new int[shape.length];
        for (int i = 0; i < dims.length; i++) {
            dims[i] = dims.length - 1 - i;
        }
        return permute(offset, shape, strides, dims);
    }

    /**
     * {@link Tensor#transpose(int, int)}: dimensions {@code a} and {@code b} swapped (negative ones
     * counted from the last).
     *
     * @throws IndexOutOfBoundsException if {@code a} or {@code b} is no dimension
     */
    static View transpose(long offset, long[] shape, long[] strides, int a, int b) {
        int[] dims = new int[shape.length];
        for (int i = 0; i < dims.length; i++) {
            dims[i] = i;
        }
        dims[checkDim(a, shape.length)] = b;
        dims[checkDim(b, shape.length)] = a;
        return permute(offset, shape, strides, dims);
    }

    /**
     * {@link Tensor#reshape}: the same elements in row-major order in {@code newShape}, one extent
     * of which may be -1 to be inferred, without copying. Packed data is always compact, so it
     * takes row-major strides; other data keeps its strides where runs of dimensions are
     * contiguous with each other (NumPy's no-copy reshape).
     *
     * @throws IllegalArgumentException if the element count differs, or the strides cannot express
     *                                  the new shape without a copy
     */
    static View reshape(long offset, long[] shape, long[] strides, boolean packed, long[] newShape) {
        long[] s = Shapes.inferShape(newShape, Shapes.numel(shape));
        if (packed) {
            return new View(offset, s, Shapes.rowMajorStrides(s));
        }
        long[] st = Shapes.reshapeStrides(shape, strides, s);
        if (st == null) {
            throw new IllegalArgumentException("cannot reshape a tensor of shape " + Arrays.toString(shape)
                    + " and strides " + Arrays.toString(strides) + " to " + Arrays.toString(s)
                    + " without copying; use copy().reshape(...)");
        }
        return new View(offset, s, st);
    }

    /**
     * {@link Tensor#broadcastTo}: the shape repeated along new leading dimensions and along
     * dimensions of extent 1, by zero strides, as NumPy's {@code broadcast_to}.
     *
     * @throws IllegalArgumentException if {@code newShape} has fewer dimensions, a negative extent,
     *                                  or an extent that differs from one that is not 1
     */
    static View broadcastTo(long offset, long[] shape, long[] strides, long[] newShape) {
        if (newShape.length < shape.length) {
            throw new IllegalArgumentException("cannot broadcast " + Arrays.toString(shape) + " to fewer dimensions " + Arrays.toString(newShape));
        }
        long[] s = newShape.clone();
        long[] st = new long[s.length];
        int lead = s.length - shape.length;
        for (int i = 0; i < s.length; i++) {
            if (s[i] < 0) {
                throw new IllegalArgumentException("negative extent in " + Arrays.toString(newShape));
            }
            if (i >= lead) {
                long old = shape[i - lead];
                if (old == s[i]) {
                    st[i] = strides[i - lead];
                } else if (old != 1) {
                    throw new IllegalArgumentException("cannot broadcast " + Arrays.toString(shape) + " to " + Arrays.toString(newShape));
                }
            }
        }
        return new View(offset, s, st);
    }

    // ---------------------------------------------------------------- element positions

    /**
     * Checks that an index has one entry per dimension.
     *
     * @throws IllegalArgumentException if {@code index} has {@code ndim} entries too many or too few
     */
    static void checkRank(int ndim, long[] index) {
        if (index.length != ndim) {
            throw new IllegalArgumentException("a " + ndim + "-d tensor needs " + ndim + " indices, got " + index.length);
        }
    }

    /**
     * The position of the element at {@code index}: its byte offset, or its bit offset for packed data.
     *
     * @throws IllegalArgumentException  if {@code index} has another number of entries than the shape
     * @throws IndexOutOfBoundsException if an entry is outside its dimension
     */
    static long position(long offset, long[] shape, long[] strides, DataType dtype, boolean packed, long[] index) {
        checkRank(shape.length, index);
        long elements = 0;
        for (int d = 0; d < index.length; d++) {
            long i = index[d];
            if (i < 0 || i >= shape[d]) {
                throw new IndexOutOfBoundsException("index " + Arrays.toString(index) + " out of bounds for shape "
                        + Arrays.toString(shape));
            }
            elements += i * strides[d];
        }
        return packed ? offset * 8 + elements * dtype.bits() : offset + elements * dtype.byteSize();
    }

    /** Visits the position (as {@link #position}) of every element, in row-major order. */
    static void forEachPosition(long offset, long[] shape, long[] strides, DataType dtype, boolean packed,
                                PositionVisitor v) {
        long numel = Shapes.numel(shape);
        if (numel == 0) {
            return;
        }
        if (packed) {
            for (long i = 0; i < numel; i++) {
                v.visit(i, offset * 8 + i * dtype.bits());
            }
            return;
        }
        int nd = shape.length;
        long unit = dtype.byteSize();
        if (nd == 0) {
            v.visit(0, offset);
            return;
        }
        long[] idx = new long[nd];
        long innerStride = strides[nd - 1] * unit;
        long inner = shape[nd - 1];
        long rowStart = offset;
        long i = 0;
        while (true) {
            long pos = rowStart;
            for (long k = 0; k < inner; k++, pos += innerStride) {
                v.visit(i++, pos);
            }
            int d = nd - 2;
            while (d >= 0) {
                idx[d]++;
                rowStart += strides[d] * unit;
                if (idx[d] < shape[d]) {
                    break;
                }
                rowStart -= idx[d] * strides[d] * unit;
                idx[d] = 0;
                d--;
            }
            if (d < 0) {
                return;
            }
        }
    }
}
