package io.github.dlpack4j;

import java.lang.foreign.MemorySegment;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;

/**
 * NumPy-style printing of a tensor's elements, with summarisation of long dimensions: the text
 * {@code np.array2string(a, separator=', ')} gives with NumPy 2's default print options
 * (precision 8, floatmode {@code maxprec}, linewidth 75).
 *
 * <p>What it reproduces from NumPy's {@code arrayprint}:
 * <ul>
 *   <li>floats ({@code FloatingFormat}): positional or scientific for the whole array, chosen from
 *       the finite non-zero elements shown (scientific when the largest magnitude is at least
 *       NumPy 2.3+'s {@code 10^min(8, finfo.precision)}, that is 1e3 for float16, 1e6 for float32
 *       and 1e8 for float64, or the smallest is below 1e-4, or their ratio exceeds 1000); Dragon4's shortest digits that identify the value in its own type (float16 0.1 is
 *       {@code 0.1}), at most 8 fractional digits; positional values right-aligned on the point
 *       and padded with spaces after it ({@code [1.5 , 2.25]}); scientific ones with a common number
 *       of mantissa digits ({@code [1.0e+20, 2.5e+00]}, extra digits being those of the exact value)
 *       and exponent width; {@code nan}, {@code inf}, {@code -inf} right-aligned.
 *   <li>complex numbers: real and imaginary parts formatted as two float arrays, the imaginary
 *       one with a {@code +} sign, {@code j} before its padding.
 *   <li>integers right-aligned to the widest; bools {@code  True}/{@code False}
 *       ({@code True} alone in a 0-d tensor).
 *   <li>{@code _formatArray}: brackets, {@code ", "} and {@code ",\n"} separators with a blank line
 *       per extra dimension, {@code ...} for summarised parts, rows wrapped at 75 characters.
 *   <li>an empty tensor (any extent 0) prints as {@code []}.
 * </ul>
 *
 * <p>Types NumPy itself cannot format as floats (bfloat16 and the 8-, 6- and 4-bit floats, which
 * ml_dtypes prints with {@code str}) get the same treatment with their own precision (the digits
 * that identify a value among that type's neighbours, so float8_e4m3fn 0.1015625 is {@code 0.1}),
 * and the classic cut-off of 1e8 for scientific notation.
 */
final class TensorFormat {
    private TensorFormat() {}

    /** NumPy's default {@code linewidth}. */
    private static final int LINE_WIDTH = 75;
    /** NumPy's default {@code precision}: digits after the point at most. */
    private static final int PRECISION = 8;
    private static final String SEPARATOR = ", ";
    private static final String SUMMARY = "...";

    /** Appends the elements; dimensions longer than {@code 2 * edge} show {@code edge} items at each end. */
    static void format(StringBuilder sb, Tensor t, MemorySegment base, ElementAccess access, long edge) {
        long[] shape = t.shape();
        for (long n : shape) {
            if (n == 0) {
                sb.append("[]");
                return;
            }
        }
        long count = 1;
        for (long n : shape) {
            count *= summarised(n, edge) ? 2 * edge : n;
        }
        long[] shown = new long[Math.toIntExact(count)];
        collect(t, shape, new long[shape.length], 0, edge, shown, 0);
        String[] words = words(t.dtype(), base, access, shown, shape.length == 0);
        if (shape.length == 0) {
            sb.append(words[0]);
            return;
        }
        sb.append(new Layout(shape, edge, words).array(0, " ", LINE_WIDTH));
    }

    // ---------------------------------------------------------------- which elements are shown

    private static boolean summarised(long n, long edge) {
        return n > edge && n - edge > edge; // 2 * edge < n without overflow
    }

    /** Stores the positions of the elements shown, in printing order, from {@code out[at]} on; returns the next slot. */
    private static int collect(Tensor t, long[] shape, long[] index, int dim, long edge, long[] out, int at) {
        if (dim == shape.length) {
            out[at] = t.positionOf(index);
            return at + 1;
        }
        long n = shape[dim];
        boolean summarise = summarised(n, edge);
        for (long i = 0; i < n; i++) {
            if (summarise && i == edge) {
                i = n - edge;
            }
            index[dim] = i;
            at = collect(t, shape, index, dim + 1, edge, out, at);
        }
        return at;
    }

    // ---------------------------------------------------------------- layout (NumPy's _formatArray)

    /** Brackets, separators, summaries and line wrapping around the formatted elements. */
    private static final class Layout {
        private final long[] shape;
        private final long edge;
        private final String[] words;
        private int next;

        Layout(long[] shape, long edge, String[] words) {
            this.shape = shape;
            this.edge = edge;
            this.words = words;
        }

        String array(int dim, String hangingIndent, int width) {
            int axesLeft = shape.length - dim;
            String nextIndent = hangingIndent + " ";
            int nextWidth = width - 1;
            long n = shape[dim];
            boolean summarise = summarised(n, edge);
            long leading = summarise ? edge : 0;
            long trailing = summarise ? edge : n;
            StringBuilder s = new StringBuilder();
            if (axesLeft == 1) {
                int elemWidth = width - 1; // max(len(","), len("]"))
                StringBuilder line = new StringBuilder(hangingIndent);
                for (long i = 0; i < leading; i++) {
                    extendLine(s, line, words[next++], elemWidth, hangingIndent);
                    line.append(SEPARATOR);
                }
                if (summarise) {
                    extendLine(s, line, SUMMARY, elemWidth, hangingIndent);
                    line.append(SEPARATOR);
                }
                for (long i = trailing; i > 1; i--) {
                    extendLine(s, line, words[next++], elemWidth, hangingIndent);
                    line.append(SEPARATOR);
                }
                extendLine(s, line, words[next++], elemWidth, hangingIndent);
                s.append(line);
            } else {
                String lineSep = "," + "\n".repeat(axesLeft - 1);
                for (long i = 0; i < leading; i++) {
                    s.append(hangingIndent).append(array(dim + 1, nextIndent, nextWidth)).append(lineSep);
                }
                if (summarise) {
                    s.append(hangingIndent).append(SUMMARY).append(lineSep);
                }
                for (long i = trailing; i > 1; i--) {
                    s.append(hangingIndent).append(array(dim + 1, nextIndent, nextWidth)).append(lineSep);
                }
                s.append(hangingIndent).append(array(dim + 1, nextIndent, nextWidth));
            }
            return "[" + s.substring(hangingIndent.length()) + "]";
        }

        /** NumPy's {@code _extendLine}: wraps before {@code word} unless the line holds only the indent. */
        private static void extendLine(StringBuilder s, StringBuilder line, String word, int width, String indent) {
            if (line.length() + word.length() > width && line.length() > indent.length()) {
                int end = line.length();
                while (end > 0 && line.charAt(end - 1) == ' ') {
                    end--;
                }
                s.append(line, 0, end).append('\n');
                line.setLength(0);
                line.append(indent);
            }
            line.append(word);
        }
    }

    // ---------------------------------------------------------------- elements

    /** The shown elements, formatted and padded to a common width as NumPy's format functions do. */
    private static String[] words(DataType dt, MemorySegment base, ElementAccess access, long[] pos, boolean zeroDim) {
        int n = pos.length;
        String[] out = new String[n];
        switch (dt.code()) {
            case BOOL -> {
                for (int i = 0; i < n; i++) {
                    out[i] = access.getLong(base, pos[i]) != 0 ? (zeroDim ? "True" : " True") : "False";
                }
            }
            case INT, UINT -> {
                boolean unsigned64 = dt.code() == DataTypeCode.UINT && dt.bits() == 64;
                int width = 0;
                for (int i = 0; i < n; i++) {
                    long v = access.getLong(base, pos[i]);
                    out[i] = unsigned64 ? Long.toUnsignedString(v) : Long.toString(v);
                    width = Math.max(width, out[i].length());
                }
                for (int i = 0; i < n; i++) {
                    out[i] = " ".repeat(width - out[i].length()) + out[i];
                }
            }
            default -> {
                FloatType type = FloatType.of(dt);
                double[] re = new double[n];
                for (int i = 0; i < n; i++) {
                    re[i] = access.getDouble(base, pos[i]);
                }
                FloatFormat real = new FloatFormat(re, type, false);
                if (!access.isComplex()) {
                    for (int i = 0; i < n; i++) {
                        out[i] = real.format(re[i]);
                    }
                } else {
                    double[] im = new double[n];
                    for (int i = 0; i < n; i++) {
                        im[i] = access.getImag(base, pos[i]);
                    }
                    FloatFormat imag = new FloatFormat(im, type, true);
                    for (int i = 0; i < n; i++) {
                        String is = imag.format(im[i]);
                        int end = is.length();
                        while (end > 0 && is.charAt(end - 1) == ' ') {
                            end--;
                        }
                        out[i] = real.format(re[i]) + is.substring(0, end) + "j" + is.substring(end);
                    }
                }
            }
        }
        return out;
    }

    /**
     * A binary floating-point type as Dragon4 sees it: stored mantissa bits and smallest normal
     * exponent (which give the spacing of its values), and the scientific cut-off.
     *
     * @param cutoffExponent scientific notation from {@code 10^cutoffExponent} on: NumPy 2.3+'s
     *                       {@code min(8, finfo.precision)} for float16 (3), float32 (6) and
     *                       float64 (8); 8, the classic rule, for the types NumPy does not format
     * @param numpyRounding  32 or 16 where NumPy compares in float32 or float16 (the 1e-4 threshold
     *                       and the max/min ratio are rounded to the type, as NEP 50 does); 0 for
     *                       comparisons in double
     */
    private record FloatType(int mantissaBits, int minExponent, int cutoffExponent, int numpyRounding) {
        static final FloatType FLOAT64 = new FloatType(52, -1022, 8, 0);
        static final FloatType FLOAT32 = new FloatType(23, -126, 6, 32);
        static final FloatType FLOAT16 = new FloatType(10, -14, 3, 16);

        static FloatType of(DataType dt) {
            return switch (dt.code()) {
                case FLOAT, COMPLEX -> {
                    int partBits = dt.code() == DataTypeCode.COMPLEX ? dt.bits() / 2 : dt.bits();
                    yield partBits == 16 ? FLOAT16 : partBits == 32 ? FLOAT32 : FLOAT64;
                }
                case BFLOAT -> other(7, -126);
                case FLOAT8_E3M4 -> other(4, -2);
                case FLOAT8_E4M3, FLOAT8_E4M3FN -> other(3, -6);
                case FLOAT8_E4M3B11FNUZ -> other(3, -10);
                case FLOAT8_E4M3FNUZ -> other(3, -7);
                case FLOAT8_E5M2 -> other(2, -14);
                case FLOAT8_E5M2FNUZ -> other(2, -15);
                case FLOAT8_E8M0FNU -> other(0, -127);
                case FLOAT6_E2M3FN -> other(3, 0);
                case FLOAT6_E3M2FN -> other(2, -2);
                case FLOAT4_E2M1FN -> other(1, 0);
                default -> FLOAT64;
            };
        }

        private static FloatType other(int mantissaBits, int minExponent) {
            return new FloatType(mantissaBits, minExponent, 8, 0);
        }

        /** {@code v} rounded to the type, for the comparisons NumPy makes in it. */
        double round(double v) {
            return switch (numpyRounding) {
                case 32 -> (float) v;
                case 16 -> Float.float16ToFloat(Float.floatToFloat16((float) v));
                default -> v;
            };
        }
    }

    /** NumPy's {@code FloatingFormat} with floatmode {@code maxprec}, precision 8. */
    private static final class FloatFormat {
        private final FloatType type;
        private final boolean plus;
        private boolean exp;
        private int padLeft;
        private int padRight;
        private int digits = PRECISION; // scientific: mantissa digits after the point, all values
        private int expDigits = 2;

        FloatFormat(double[] data, FloatType type, boolean plus) {
            this.type = type;
            this.plus = plus;
            double max = 0;
            double min = Double.POSITIVE_INFINITY;
            int finite = 0;
            boolean negInf = false;
            for (double v : data) {
                if (Double.isFinite(v)) {
                    finite++;
                    if (v != 0) {
                        max = Math.max(max, Math.abs(v));
                        min = Math.min(min, Math.abs(v));
                    }
                } else if (v == Double.NEGATIVE_INFINITY) {
                    negInf = true;
                }
            }
            if (max > 0) {
                double cutoff = Math.pow(10, type.cutoffExponent());
                exp = max >= cutoff || min < type.round(1e-4) || type.round(max / min) > 1000;
            }
            if (exp) {
                int fracMax = 0;
                int intMax = 0;
                int expMax = 0;
                for (double v : data) {
                    if (Double.isFinite(v)) {
                        Decimal d = Decimal.scientific(v, type, PRECISION, false);
                        fracMax = Math.max(fracMax, d.digits.length() - 1);
                        intMax = Math.max(intMax, sign(v).length() + 1);
                        expMax = Math.max(expMax, Integer.toString(Math.abs(d.exponent)).length());
                    }
                }
                digits = fracMax;
                expDigits = Math.max(2, expMax);
                padLeft = intMax;
                padRight = expDigits + 2 + digits;
            } else {
                for (double v : data) {
                    if (Double.isFinite(v)) {
                        String[] parts = positional(v, false);
                        padLeft = Math.max(padLeft, parts[0].length());
                        padRight = Math.max(padRight, parts[1].length());
                    }
                }
            }
            if (finite < data.length) {
                int offset = padRight + 1;
                padLeft = Math.max(padLeft, Math.max(3 - offset, 3 + (plus || negInf ? 1 : 0) - offset));
            }
        }

        private String sign(double v) {
            return v < 0 || (v == 0 && 1 / v < 0) ? "-" : plus ? "+" : "";
        }

        /** Integer part with sign, and fractional part: {@code "-1", "5"} for -1.5. */
        private String[] positional(double v, boolean wholeDigits) {
            String plain = Decimal.positional(v, type, PRECISION, wholeDigits).toPlainString();
            int dot = plain.indexOf('.');
            String intPart = dot < 0 ? plain : plain.substring(0, dot);
            String frac = dot < 0 ? "" : plain.substring(dot + 1);
            return new String[] {sign(v) + intPart, frac};
        }

        String format(double v) {
            if (!Double.isFinite(v)) {
                String s = Double.isNaN(v) ? (plus ? "+nan" : "nan") : v < 0 ? "-inf" : plus ? "+inf" : "inf";
                return pad(s, padLeft + padRight + 1);
            }
            if (exp) {
                Decimal d = Decimal.scientific(v, type, digits, true);
                String e = Integer.toString(Math.abs(d.exponent));
                return pad(sign(v) + d.digits.charAt(0), padLeft) + "." + d.digits.substring(1)
                        + "e" + (d.exponent < 0 ? "-" : "+") + "0".repeat(Math.max(0, expDigits - e.length())) + e;
            }
            String[] parts = positional(v, true);
            return pad(parts[0], padLeft) + "." + parts[1] + " ".repeat(padRight - parts[1].length());
        }

        private static String pad(String s, int width) {
            return s.length() >= width ? s : " ".repeat(width - s.length()) + s;
        }
    }

    // ---------------------------------------------------------------- digits (NumPy's Dragon4)

    /**
     * Decimal digits of |v|: {@code digits} without a point, the first of which has weight
     * {@code 10^exponent}.
     */
    private record Decimal(String digits, int exponent) {
        /** No lower bound on the digits generated (Dragon4's {@code min_digits} of -1). */
        private static final int NO_MIN = Integer.MAX_VALUE;

        /**
         * Scientific notation with at most {@code precision} digits after the first; with
         * {@code padded}, exactly {@code precision} (Dragon4's {@code min_digits}, trim 'k'), else
         * without trailing zeros (trim '.').
         */
        static Decimal scientific(double v, FloatType type, int precision, boolean padded) {
            double a = Math.abs(v);
            if (a == 0) {
                return new Decimal(padded ? "0".repeat(1 + precision) : "0", 0);
            }
            BigDecimal x = new BigDecimal(a);
            int top = leadingExponent(x);
            BigDecimal r = dragon4(x, a, type, top - precision, padded ? top - precision : NO_MIN);
            int e = leadingExponent(r);
            String d = padded
                    ? r.movePointLeft(e).setScale(precision, RoundingMode.UNNECESSARY).unscaledValue().toString()
                    : r.stripTrailingZeros().unscaledValue().toString();
            return new Decimal(d, e);
        }

        /**
         * Positional notation with at most {@code precision} digits after the point; with
         * {@code wholeDigits}, digits are generated at least down to the units (Dragon4's
         * {@code min_digits} of 0). Trailing zeros after the point are dropped.
         */
        static BigDecimal positional(double v, FloatType type, int precision, boolean wholeDigits) {
            double a = Math.abs(v);
            if (a == 0) {
                return BigDecimal.ZERO;
            }
            return dragon4(new BigDecimal(a), a, type, -precision, wholeDigits ? 0 : NO_MIN).stripTrailingZeros();
        }

        private static int leadingExponent(BigDecimal x) {
            return x.signum() == 0 ? 0 : x.precision() - x.scale() - 1;
        }

        /**
         * Dragon4's unique mode on {@code x} (= {@code a} > 0): digits are generated from the
         * leading one down and stop at the first position at or below {@code minPos} where
         * rounding down or up stays inside the interval of values that round to {@code x} in its
         * type (its ends included when the significand is even), or at position {@code cutoff}.
         * The last digit rounds down if only that stays inside, up if only that does, and
         * otherwise to nearest, ties to an even digit. Returns the rounded value.
         */
        private static BigDecimal dragon4(BigDecimal x, double a, FloatType type, int cutoff, int minPos) {
            int binExp = Math.max(Math.getExponent(a), type.minExponent());
            int ulpExp = binExp - type.mantissaBits();
            boolean even = (((long) Math.scalb(a, -ulpExp)) & 1) == 0;
            boolean unequal = a == Math.scalb(1.0, Math.getExponent(a)) && Math.getExponent(a) > type.minExponent();
            BigDecimal marginHigh = pow2(ulpExp - 1);
            BigDecimal marginLow = unequal ? pow2(ulpExp - 2) : marginHigh;
            for (int pos = Math.max(leadingExponent(x), cutoff); ; pos--) {
                BigDecimal down = x.setScale(-pos, RoundingMode.FLOOR);
                BigDecimal q = BigDecimal.ONE.scaleByPowerOfTen(pos);
                BigDecimal rem = x.subtract(down);
                int cl = rem.compareTo(marginLow);
                int ch = rem.add(marginHigh).compareTo(q);
                boolean low = even ? cl <= 0 : cl < 0;
                boolean high = even ? ch >= 0 : ch > 0;
                if (((low || high) && pos <= minPos) || pos == cutoff) {
                    boolean roundDown = low;
                    if (low == high) {
                        int c = rem.multiply(BigDecimal.TWO).compareTo(q);
                        roundDown = c < 0 || (c == 0 && !down.unscaledValue().testBit(0));
                    }
                    return roundDown ? down : down.add(q);
                }
            }
        }

        private static BigDecimal pow2(int k) {
            return k >= 0 ? new BigDecimal(BigInteger.ONE.shiftLeft(k)) : new BigDecimal(BigInteger.valueOf(5).pow(-k), -k);
        }
    }
}
