package io.github.dlpack4j;

import java.lang.foreign.MemorySegment;

/** NumPy-style printing of a tensor's elements, with summarisation of long dimensions. */
final class TensorFormat {
    private TensorFormat() {}

    /** Appends the elements; dimensions longer than {@code 2 * edge} show {@code edge} items at each end. */
    static void format(StringBuilder sb, Tensor t, MemorySegment base, ElementAccess access, long edge) {
        long[] shape = t.shape();
        long[] index = new long[shape.length];
        boolean floating = isFloating(t.dtype());
        appendDim(sb, t, base, access, shape, index, 0, edge, floating);
    }

    private static boolean isFloating(DataType t) {
        return switch (t.code()) {
            case INT, UINT, BOOL -> false;
            default -> true;
        };
    }

    private static void appendDim(StringBuilder sb, Tensor t, MemorySegment base, ElementAccess access, long[] shape,
                                  long[] index, int dim, long edge, boolean floating) {
        if (dim == shape.length) {
            appendElement(sb, t, base, access, index, floating);
            return;
        }
        sb.append('[');
        long n = shape[dim];
        boolean summarise = n > 2 * edge;
        String sep = dim == shape.length - 1 ? ", " : "," + "\n".repeat(shape.length - 1 - dim) + " ".repeat(dim + 1);
        for (long i = 0; i < n; i++) {
            if (summarise && i == edge) {
                sb.append("...").append(sep);
                i = n - edge;
            }
            index[dim] = i;
            appendDim(sb, t, base, access, shape, index, dim + 1, edge, floating);
            if (i < n - 1) {
                sb.append(sep);
            }
        }
        sb.append(']');
    }

    private static void appendElement(StringBuilder sb, Tensor t, MemorySegment base, ElementAccess access,
                                      long[] index, boolean floating) {
        long pos = t.positionOf(index);
        DataType dt = t.dtype();
        if (dt.code() == DataTypeCode.BOOL) {
            sb.append(access.getLong(base, pos) != 0 ? "True" : "False");
        } else if (dt.equals(DataType.UINT64)) {
            sb.append(Long.toUnsignedString(access.getLong(base, pos)));
        } else if (!floating) {
            sb.append(access.getLong(base, pos));
        } else if (access.isComplex()) {
            double im = access.getImag(base, pos);
            sb.append(number(access.getDouble(base, pos))).append(im < 0 || (im == 0 && 1 / im < 0) ? "-" : "+")
                    .append(number(Math.abs(im))).append('j');
        } else {
            sb.append(number(access.getDouble(base, pos)));
        }
    }

    /** {@code 1.}, {@code 0.5}, {@code 1e+20}, {@code nan}, {@code inf}: NumPy's short forms. */
    private static String number(double v) {
        if (Double.isNaN(v)) {
            return "nan";
        }
        if (Double.isInfinite(v)) {
            return v > 0 ? "inf" : "-inf";
        }
        if (v == Math.rint(v) && Math.abs(v) < 1e16) {
            return (v == 0 && 1 / v < 0 ? "-0" : Long.toString((long) v)) + ".";
        }
        return shortest(v).replace("E", "e");
    }

    private static String shortest(double v) {
        float f = (float) v;
        return f == v ? Float.toString(f) : Double.toString(v);
    }
}
