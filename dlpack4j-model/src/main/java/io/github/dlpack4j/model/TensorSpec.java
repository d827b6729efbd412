package io.github.dlpack4j.model;

import java.util.Arrays;
import java.util.Objects;

import io.github.dlpack4j.DataType;

/**
 * A declared input or output of a {@link PythonModel}: its name, element type and shape, where -1 is
 * any extent and, with batching, dim 0 is the batch's rows. The record keeps a copy of the shape and
 * hands out copies; two specs are equal when their names, dtypes and shapes are.
 *
 * @param name  the input's or output's name
 * @param dtype its element type
 * @param shape its extents; -1 for any
 */
public record TensorSpec(String name, DataType dtype, long[] shape) {
    /**
     * Checks and copies the parts.
     *
     * @param name  the input's or output's name
     * @param dtype its element type
     * @param shape its extents; -1 for any
     * @throws IllegalArgumentException if an extent is below -1
     */
    public TensorSpec {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(dtype, "dtype");
        shape = shape.clone();
        for (long e : shape) {
            if (e < -1) {
                throw new IllegalArgumentException(name + ": extent " + e + " in " + Arrays.toString(shape)
                        + "; an extent is -1 (any) or at least 0");
            }
        }
    }

    /** {@return a copy of the extents; -1 for any} */
    @Override
    public long[] shape() {
        return shape.clone();
    }

    /** {@return the rank: the number of extents} */
    public int ndim() {
        return shape.length;
    }

    /**
     * {@return whether {@code actual} fits: the same rank, and each extent equal or declared -1}
     *
     * @param actual a tensor's shape
     */
    boolean accepts(long[] actual) {
        if (actual.length != shape.length) {
            return false;
        }
        for (int i = 0; i < shape.length; i++) {
            if (shape[i] != -1 && shape[i] != actual[i]) {
                return false;
            }
        }
        return true;
    }

    /** {@return the extents with -1 read as 1: the shape of the warm-up's zeros} */
    long[] warmUpShape() {
        return Arrays.stream(shape).map(e -> e == -1 ? 1 : e).toArray();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorSpec(String n, DataType d, long[] s) && name.equals(n) && dtype.equals(d)
                && Arrays.equals(shape, s);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, dtype, Arrays.hashCode(shape));
    }

    @Override
    public String toString() {
        return name + " " + dtype + " " + Arrays.toString(shape);
    }
}
