package io.github.dlpack4j.internal;

/** Compact row-major (C-order) layouts, for dlpack4j's modules. Not API. */
public final class RowMajor {
    private RowMajor() {}

    /**
     * The strides in elements of a C-contiguous array of {@code shape}; an extent of 0 counts as 1.
     *
     * @param shape the extents
     * @return one stride per dimension, the last 1
     */
    public static long[] strides(long[] shape) {
        long[] strides = new long[shape.length];
        long step = 1;
        for (int d = shape.length - 1; d >= 0; d--) {
            strides[d] = step;
            step *= Math.max(shape[d], 1);
        }
        return strides;
    }
}
