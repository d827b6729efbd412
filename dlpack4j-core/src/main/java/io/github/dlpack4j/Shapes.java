package io.github.dlpack4j;

import io.github.dlpack4j.internal.RowMajor;

import java.util.Arrays;

/** Shape and stride arithmetic, overflow-checked where the numbers come from outside. */
final class Shapes {
    private Shapes() {}

    /** The byte range the elements reach, relative to element [0, ..., 0]. */
    record Extent(long numel, long minByte, long endByte) {}

    static long numel(long[] shape) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        return n;
    }

    /** The product of the shape; refuses negative extents and overflow. */
    static long checkedNumel(long[] shape) {
        long n = 1;
        for (int d = 0; d < shape.length; d++) {
            if (shape[d] < 0) {
                throw new IllegalArgumentException("shape[" + d + "] = " + shape[d] + ": extents must not be negative");
            }
            try {
                n = Math.multiplyExact(n, shape[d]);
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " has more than 2^63 elements");
            }
        }
        return n;
    }

    static long[] rowMajorStrides(long[] shape) {
        return RowMajor.strides(shape);
    }

    /** Whether the strides are compact row-major, ignoring dimensions of extent 1 (any stride there). */
    static boolean isRowMajor(long[] shape, long[] strides) {
        long expected = 1;
        for (int d = shape.length - 1; d >= 0; d--) {
            if (shape[d] == 0) {
                return true;
            }
            if (shape[d] != 1) {
                if (strides[d] != expected) {
                    return false;
                }
                expected *= shape[d];
            }
        }
        return true;
    }

    /**
     * The byte range reached by a strided tensor, relative to element [0, ..., 0], with every step
     * overflow-checked. {@code padded} only matters for sub-byte types.
     *
     * @throws ArithmeticException if any product or sum overflows 64 bits
     */
    static Extent extent(long[] shape, long[] strides, DataType dtype, boolean padded) {
        return extent(shape, strides, dtype, padded, checkedNumel(shape));
    }

    /** {@link #extent(long[], long[], DataType, boolean)} of a shape whose element count {@code n} is known to fit. */
    static Extent extent(long[] shape, long[] strides, DataType dtype, boolean padded, long n) {
        if (dtype.isSubByte() && !padded) {
            if (n > 0 && !isRowMajor(shape, strides)) {
                throw new IllegalArgumentException("packed " + dtype + " data must be compact, but strides are "
                        + Arrays.toString(strides) + " for shape " + Arrays.toString(shape));
            }
            return new Extent(n, 0, dtype.storageBytes(n, false));
        }
        if (n == 0) {
            return new Extent(0, 0, 0);
        }
        long lo = 0;
        long hi = 0;
        for (int d = 0; d < shape.length; d++) {
            long reach = Math.multiplyExact(shape[d] - 1, strides[d]);
            if (reach < 0) {
                lo = Math.addExact(lo, reach);
            } else {
                hi = Math.addExact(hi, reach);
            }
        }
        long unit = dtype.byteSize();
        return new Extent(n, Math.multiplyExact(lo, unit), Math.addExact(Math.multiplyExact(hi, unit), unit));
    }

    static long[] remove(long[] a, int i) {
        long[] r = new long[a.length - 1];
        System.arraycopy(a, 0, r, 0, i);
        System.arraycopy(a, i + 1, r, i, a.length - i - 1);
        return r;
    }

    /** Python's {@code slice(start, stop, step).indices(length)}: returns {first index, count}. */
    static long[] sliceIndices(long length, long start, long stop, long step) {
        if (step == 0) {
            throw new IllegalArgumentException("slice step cannot be zero");
        }
        long lower = step < 0 ? -1 : 0;
        long upper = step < 0 ? length - 1 : length;
        long first = clampIndex(start, length, lower, upper);
        long end = clampIndex(stop, length, lower, upper);
        long count;
        if (step > 0) {
            count = first < end ? (end - first - 1) / step + 1 : 0;
        } else {
            count = end < first ? (first - end - 1) / -step + 1 : 0;
        }
        return new long[] {count == 0 ? 0 : first, count};
    }

    private static long clampIndex(long i, long length, long lower, long upper) {
        if (i < 0) {
            i = i < -length ? lower : i + length; // written so that Long.MIN_VALUE cannot overflow
            return Math.max(i, lower);
        }
        return Math.min(i, upper);
    }

    /** The shape with a single -1 inferred; checks the element count. */
    static long[] inferShape(long[] shape, long numel) {
        long[] s = shape.clone();
        int unknown = -1;
        long known = 1;
        for (int d = 0; d < s.length; d++) {
            if (s[d] == -1 && unknown < 0) {
                unknown = d;
            } else if (s[d] < 0) {
                throw new IllegalArgumentException("invalid shape " + Arrays.toString(shape));
            } else {
                known = Math.multiplyExact(known, s[d]);
            }
        }
        if (unknown >= 0) {
            if (known == 0 || numel % known != 0) {
                throw new IllegalArgumentException("cannot infer -1 in " + Arrays.toString(shape) + " for " + numel + " elements");
            }
            s[unknown] = numel / known;
        } else if (known != numel) {
            throw new IllegalArgumentException("cannot reshape " + numel + " elements to " + Arrays.toString(shape));
        }
        return s;
    }

    /**
     * Strides that give {@code newShape} the same elements in row-major order without copying, or
     * null if there are none (NumPy's no-copy reshape: merge runs of old dimensions that are
     * contiguous with each other, then split them).
     */
    static long[] reshapeStrides(long[] oldShape, long[] oldStrides, long[] newShape) {
        if (numel(newShape) == 0 || numel(oldShape) == 0) {
            return rowMajorStrides(newShape);
        }
        // Drop extent-1 dimensions of the old shape: their strides do not matter.
        int n = 0;
        long[] os = new long[oldShape.length];
        long[] ost = new long[oldShape.length];
        for (int d = 0; d < oldShape.length; d++) {
            if (oldShape[d] != 1) {
                os[n] = oldShape[d];
                ost[n++] = oldStrides[d];
            }
        }
        long[] ns = new long[newShape.length];
        int oi = 0;
        int ni = 0;
        while (ni < newShape.length) {
            if (newShape[ni] == 1) {
                ns[ni] = oi < n ? ost[oi] * os[oi] : 1;
                ni++;
                continue;
            }
            if (oi >= n) {
                return null;
            }
            // Grow a group of old dims [oi, oj) and new dims [ni, nj) with equal products.
            int oj = oi + 1;
            int nj = ni + 1;
            long op = os[oi];
            long np = newShape[ni];
            while (op != np) {
                if (op < np) {
                    if (oj >= n) {
                        return null;
                    }
                    op *= os[oj++];
                } else {
                    while (nj < newShape.length && newShape[nj] == 1) {
                        nj++;
                    }
                    if (nj >= newShape.length) {
                        return null;
                    }
                    np *= newShape[nj++];
                }
            }
            for (int k = oi; k < oj - 1; k++) {
                if (ost[k] != ost[k + 1] * os[k + 1]) {
                    return null;
                }
            }
            long stride = ost[oj - 1];
            for (int k = nj - 1; k >= ni; k--) {
                ns[k] = stride;
                stride *= newShape[k];
            }
            oi = oj;
            ni = nj;
        }
        return oi == n ? ns : null;
    }
}
