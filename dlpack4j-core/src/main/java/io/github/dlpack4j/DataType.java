package io.github.dlpack4j;

import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * An element type ({@code DLDataType}): a type code, the bits of one lane, and the lanes of a
 * vector element.
 *
 * <p>The constructor accepts exactly the combinations DLPack 1.3 defines: integers of 1, 2, 4, 8,
 * 16, 32 or 64 bits, floats of 16, 32 or 64 bits, bfloat16, complex numbers of 32, 64 or 128 bits,
 * 8-bit bools, the FP8 codes at 8 bits, FP6 at 6 and FP4 at 4, opaque handles of whole bytes, and
 * 1 to 65535 lanes. Types of fewer than 8 bits per element are <em>sub-byte</em> types, packed
 * little bit-endian unless the producer sets {@link DlpackFlags#IS_SUBBYTE_TYPE_PADDED}.
 *
 * @param code  the type code
 * @param bits  bits of one lane (1 to 255)
 * @param lanes number of lanes (1 to 65535); 1 for scalars
 */
public record DataType(DataTypeCode code, int bits, int lanes) {
    /** 8-bit boolean. */
    public static final DataType BOOL = new DataType(DataTypeCode.BOOL, 8, 1);
    /** Signed 8-bit integer. */
    public static final DataType INT8 = new DataType(DataTypeCode.INT, 8, 1);
    /** Signed 16-bit integer. */
    public static final DataType INT16 = new DataType(DataTypeCode.INT, 16, 1);
    /** Signed 32-bit integer. */
    public static final DataType INT32 = new DataType(DataTypeCode.INT, 32, 1);
    /** Signed 64-bit integer. */
    public static final DataType INT64 = new DataType(DataTypeCode.INT, 64, 1);
    /** Unsigned 8-bit integer. */
    public static final DataType UINT8 = new DataType(DataTypeCode.UINT, 8, 1);
    /** Unsigned 16-bit integer. */
    public static final DataType UINT16 = new DataType(DataTypeCode.UINT, 16, 1);
    /** Unsigned 32-bit integer. */
    public static final DataType UINT32 = new DataType(DataTypeCode.UINT, 32, 1);
    /** Unsigned 64-bit integer. */
    public static final DataType UINT64 = new DataType(DataTypeCode.UINT, 64, 1);
    /** IEEE binary16. */
    public static final DataType FLOAT16 = new DataType(DataTypeCode.FLOAT, 16, 1);
    /** bfloat16. */
    public static final DataType BFLOAT16 = new DataType(DataTypeCode.BFLOAT, 16, 1);
    /** IEEE binary32. */
    public static final DataType FLOAT32 = new DataType(DataTypeCode.FLOAT, 32, 1);
    /** IEEE binary64. */
    public static final DataType FLOAT64 = new DataType(DataTypeCode.FLOAT, 64, 1);
    /** Complex of two float32. */
    public static final DataType COMPLEX64 = new DataType(DataTypeCode.COMPLEX, 64, 1);
    /** Complex of two float64. */
    public static final DataType COMPLEX128 = new DataType(DataTypeCode.COMPLEX, 128, 1);
    /** FP8 e3m4. */
    public static final DataType FLOAT8_E3M4 = new DataType(DataTypeCode.FLOAT8_E3M4, 8, 1);
    /** FP8 e4m3. */
    public static final DataType FLOAT8_E4M3 = new DataType(DataTypeCode.FLOAT8_E4M3, 8, 1);
    /** FP8 e4m3b11fnuz. */
    public static final DataType FLOAT8_E4M3B11FNUZ = new DataType(DataTypeCode.FLOAT8_E4M3B11FNUZ, 8, 1);
    /** FP8 e4m3fn. */
    public static final DataType FLOAT8_E4M3FN = new DataType(DataTypeCode.FLOAT8_E4M3FN, 8, 1);
    /** FP8 e4m3fnuz. */
    public static final DataType FLOAT8_E4M3FNUZ = new DataType(DataTypeCode.FLOAT8_E4M3FNUZ, 8, 1);
    /** FP8 e5m2. */
    public static final DataType FLOAT8_E5M2 = new DataType(DataTypeCode.FLOAT8_E5M2, 8, 1);
    /** FP8 e5m2fnuz. */
    public static final DataType FLOAT8_E5M2FNUZ = new DataType(DataTypeCode.FLOAT8_E5M2FNUZ, 8, 1);
    /** FP8 e8m0fnu. */
    public static final DataType FLOAT8_E8M0FNU = new DataType(DataTypeCode.FLOAT8_E8M0FNU, 8, 1);
    /** FP6 e2m3fn. */
    public static final DataType FLOAT6_E2M3FN = new DataType(DataTypeCode.FLOAT6_E2M3FN, 6, 1);
    /** FP6 e3m2fn. */
    public static final DataType FLOAT6_E3M2FN = new DataType(DataTypeCode.FLOAT6_E3M2FN, 6, 1);
    /** FP4 e2m1fn. */
    public static final DataType FLOAT4_E2M1FN = new DataType(DataTypeCode.FLOAT4_E2M1FN, 4, 1);

    /** Java element types and their dtypes, as DLPack.jl's {@code jltypes_to_dtypes}. */
    private static final Map<Class<?>, DataType> JAVA_TO_DTYPE = Map.of(
            boolean.class, BOOL, byte.class, INT8, short.class, INT16, char.class, UINT16,
            int.class, INT32, long.class, INT64, float.class, FLOAT32, double.class, FLOAT64);

    /** Validates the combination against DLPack 1.3. */
    public DataType {
        Objects.requireNonNull(code, "code");
        if (bits < 1 || bits > 255) {
            throw new DlpackException("dtype.bits = " + bits + ": must be between 1 and 255");
        }
        if (lanes < 1 || lanes > 0xFFFF) {
            throw new DlpackException("dtype.lanes = " + lanes + ": must be between 1 and 65535");
        }
        boolean ok = switch (code) {
            case INT, UINT -> bits == 1 || bits == 2 || bits == 4 || bits == 8 || bits == 16 || bits == 32 || bits == 64;
            case FLOAT -> bits == 16 || bits == 32 || bits == 64;
            case COMPLEX -> bits == 32 || bits == 64 || bits == 128;
            case OPAQUE_HANDLE -> bits % 8 == 0;
            default -> bits == code.fixedBits();
        };
        if (!ok) {
            throw new DlpackException("dtype.bits = " + bits + ": not a valid width for " + code
                    + (code.fixedBits() != 0 ? " (it must be " + code.fixedBits() + ")" : ""));
        }
    }

    /**
     * The dtype with the given C fields.
     *
     * @param code  the {@code DLDataTypeCode} value
     * @param bits  bits of one lane
     * @param lanes vector lanes per element, 1 for scalars
     * @return the dtype; a shared instance for scalar types
     * @throws DlpackException if DLPack 1.3 does not define that combination
     */
    public static DataType of(int code, int bits, int lanes) {
        if (lanes == 1 && code >= 0 && code < COMMON.length && bits >= 0 && bits < COMMON[code].length) {
            DataType t = COMMON[code][bits];
            if (t != null) {
                return t; // imports are hot: no allocation for the scalar types
            }
        }
        return new DataType(DataTypeCode.of(code), bits, lanes);
    }

    /** Every valid scalar dtype, by code and bits. */
    private static final DataType[][] COMMON = commonTypes();

    private static DataType[][] commonTypes() {
        DataType[][] table = new DataType[DataTypeCode.values().length][129];
        for (DataTypeCode c : DataTypeCode.values()) {
            for (int b = 1; b <= 128; b++) {
                try {
                    table[c.code()][b] = new DataType(c, b, 1);
                } catch (DlpackException notValid) {
                    // stays null: built with validation on demand
                }
            }
        }
        return table;
    }

    /**
     * The dtype that holds a Java primitive type: {@code boolean} → BOOL, {@code byte} → INT8,
     * {@code short} → INT16, {@code char} → UINT16, {@code int} → INT32, {@code long} → INT64,
     * {@code float} → FLOAT32, {@code double} → FLOAT64.
     *
     * @param javaType a primitive class such as {@code float.class}
     * @return the dtype whose elements that primitive holds
     * @throws IllegalArgumentException for a type that is not one of those
     */
    public static DataType ofJavaType(Class<?> javaType) {
        DataType t = JAVA_TO_DTYPE.get(javaType);
        if (t == null) {
            throw new IllegalArgumentException("no DLPack dtype for Java type " + javaType.getName()
                    + "; supported: boolean, byte, short, char, int, long, float, double");
        }
        return t;
    }

    /** {@return the Java primitive type of {@link #ofJavaType}'s table that maps to this dtype, if any} */
    public Optional<Class<?>> javaType() {
        for (Map.Entry<Class<?>, DataType> e : JAVA_TO_DTYPE.entrySet()) {
            if (e.getValue().equals(this)) {
                return Optional.of(e.getKey());
            }
        }
        return Optional.empty();
    }

    /** {@return bits of one element: {@code bits * lanes}} */
    public int bitsPerElement() {
        return bits * lanes;
    }

    /** {@return whether one element takes less than a byte (FP4, FP6, sub-byte integers)} */
    public boolean isSubByte() {
        return bitsPerElement() < 8;
    }

    /**
     * {@return bytes one element occupies when it is not packed: {@code (bits * lanes + 7) / 8}} This
     * is also the unit of strides for every type that is not packed.
     */
    public int byteSize() {
        return (bitsPerElement() + 7) / 8;
    }

    /**
     * Bytes that {@code count} compactly stored elements occupy: packed for sub-byte types unless
     * {@code padded}, whole bytes otherwise.
     *
     * @param count  number of elements
     * @param padded whether sub-byte elements take a whole byte each (ignored for other types)
     * @return the size in bytes, rounded up to a whole byte
     * @throws ArithmeticException if the size overflows a {@code long}
     */
    public long storageBytes(long count, boolean padded) {
        if (isSubByte() && !padded) {
            return Math.addExact(Math.multiplyExact(count, bitsPerElement()), 7) / 8;
        }
        return Math.multiplyExact(count, byteSize());
    }

    /** Whether elements are real or complex numbers that {@link Tensor} can read and write. */
    boolean isNumeric() {
        return lanes == 1 && code != DataTypeCode.OPAQUE_HANDLE;
    }

    /** NumPy-style name, such as {@code float32}, {@code bool}, {@code float8_e4m3fn} or {@code int8x4}. */
    @Override
    public String toString() {
        String base = switch (code) {
            case INT -> "int" + bits;
            case UINT -> "uint" + bits;
            case FLOAT -> "float" + bits;
            case BFLOAT -> "bfloat" + bits;
            case COMPLEX -> "complex" + bits;
            case BOOL -> bits == 8 ? "bool" : "bool" + bits;
            case OPAQUE_HANDLE -> "handle" + bits;
            default -> code.name().toLowerCase(Locale.ROOT);
        };
        return lanes == 1 ? base : base + "x" + lanes;
    }
}
