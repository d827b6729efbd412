package io.github.dlpack4j;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import java.lang.foreign.MemorySegment;

/**
 * Reads and writes one element of a given dtype, converting to and from {@code double} and
 * {@code long}. A position is a byte offset, or a bit offset for packed sub-byte types.
 *
 * <p>Unaligned layouts throughout: foreign producers may hand out data at any byte offset.
 */
final class ElementAccess {
    private enum Kind {
        BOOL, INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64,
        COMPLEX32, COMPLEX64, COMPLEX128, SMALL_FLOAT_BYTE, SMALL_FLOAT_PACKED, SUB_INT_BYTE, SUB_INT_PACKED,
        UNSUPPORTED
    }

    private final Kind kind;
    private final DataType dtype;
    private final SmallFloat smallFloat;
    private final int bits;
    private final boolean signed;

    private ElementAccess(Kind kind, DataType dtype, SmallFloat smallFloat) {
        this.kind = kind;
        this.dtype = dtype;
        this.smallFloat = smallFloat;
        this.bits = dtype.bits();
        this.signed = dtype.code() == DataTypeCode.INT;
    }

    private static final java.util.concurrent.ConcurrentHashMap<DataType, ElementAccess> PACKED =
            new java.util.concurrent.ConcurrentHashMap<>();
    private static final java.util.concurrent.ConcurrentHashMap<DataType, ElementAccess> UNPACKED =
            new java.util.concurrent.ConcurrentHashMap<>();

    /** Scalar dtypes by code and bits, unpacked: the common case, found without hashing. */
    private static final ElementAccess[][] SCALARS = new ElementAccess[DataTypeCode.values().length][129];

    /** The access for elements of {@code t}; {@code packed} for sub-byte data without padding. Shared. */
    static ElementAccess of(DataType t, boolean packed) {
        if (!packed && t.lanes() == 1 && t.bits() <= 128) {
            ElementAccess[] byBits = SCALARS[t.code().code()];
            ElementAccess a = byBits[t.bits()];
            if (a == null) {
                a = create(t, false);
                byBits[t.bits()] = a; // a benign race: any thread's instance is equivalent
            }
            return a;
        }
        return (packed ? PACKED : UNPACKED).computeIfAbsent(t, k -> create(k, packed));
    }

    private static ElementAccess create(DataType t, boolean packed) {
        if (t.lanes() != 1) {
            return new ElementAccess(Kind.UNSUPPORTED, t, null);
        }
        SmallFloat sf = smallFloat(t.code());
        Kind k = switch (t.code()) {
            case BOOL -> Kind.BOOL;
            case INT, UINT -> switch (t.bits()) {
                case 8 -> t.code() == DataTypeCode.INT ? Kind.INT8 : Kind.UINT8;
                case 16 -> t.code() == DataTypeCode.INT ? Kind.INT16 : Kind.UINT16;
                case 32 -> t.code() == DataTypeCode.INT ? Kind.INT32 : Kind.UINT32;
                case 64 -> t.code() == DataTypeCode.INT ? Kind.INT64 : Kind.UINT64;
                default -> packed ? Kind.SUB_INT_PACKED : Kind.SUB_INT_BYTE;
            };
            case FLOAT -> switch (t.bits()) {
                case 16 -> Kind.FLOAT16;
                case 32 -> Kind.FLOAT32;
                default -> Kind.FLOAT64;
            };
            case BFLOAT -> Kind.BFLOAT16;
            case COMPLEX -> switch (t.bits()) {
                case 32 -> Kind.COMPLEX32;
                case 64 -> Kind.COMPLEX64;
                default -> Kind.COMPLEX128;
            };
            case OPAQUE_HANDLE -> Kind.UNSUPPORTED;
            default -> t.bits() < 8 && packed ? Kind.SMALL_FLOAT_PACKED : Kind.SMALL_FLOAT_BYTE;
        };
        return new ElementAccess(k, t, sf);
    }

    private static SmallFloat smallFloat(DataTypeCode c) {
        return switch (c) {
            case FLOAT8_E3M4 -> SmallFloat.E3M4;
            case FLOAT8_E4M3 -> SmallFloat.E4M3;
            case FLOAT8_E4M3B11FNUZ -> SmallFloat.E4M3B11FNUZ;
            case FLOAT8_E4M3FN -> SmallFloat.E4M3FN;
            case FLOAT8_E4M3FNUZ -> SmallFloat.E4M3FNUZ;
            case FLOAT8_E5M2 -> SmallFloat.E5M2;
            case FLOAT8_E5M2FNUZ -> SmallFloat.E5M2FNUZ;
            case FLOAT8_E8M0FNU -> SmallFloat.E8M0FNU;
            case FLOAT6_E2M3FN -> SmallFloat.E2M3FN;
            case FLOAT6_E3M2FN -> SmallFloat.E3M2FN;
            case FLOAT4_E2M1FN -> SmallFloat.E2M1FN;
            default -> null;
        };
    }

    /** Whether the elements can be read and written as numbers. */
    boolean isSupported() {
        return kind != Kind.UNSUPPORTED;
    }

    boolean isComplex() {
        return kind == Kind.COMPLEX32 || kind == Kind.COMPLEX64 || kind == Kind.COMPLEX128;
    }

    /** Whether positions are bit offsets. */
    boolean isPacked() {
        return kind == Kind.SMALL_FLOAT_PACKED || kind == Kind.SUB_INT_PACKED;
    }

    private UnsupportedOperationException unsupported() {
        return new UnsupportedOperationException("elements of dtype " + dtype + " cannot be read or written as numbers");
    }

    /** The element (the real part of a complex one) as a double. */
    double getDouble(MemorySegment s, long pos) {
        return switch (kind) {
            case FLOAT32, COMPLEX64 -> s.get(JAVA_FLOAT_UNALIGNED, pos);
            case FLOAT64, COMPLEX128 -> s.get(JAVA_DOUBLE_UNALIGNED, pos);
            case FLOAT16, COMPLEX32 -> Float.float16ToFloat(s.get(JAVA_SHORT_UNALIGNED, pos));
            case BFLOAT16 -> Float.intBitsToFloat(s.get(JAVA_SHORT_UNALIGNED, pos) << 16);
            case SMALL_FLOAT_BYTE -> smallFloat.decode(s.get(JAVA_BYTE, pos));
            case SMALL_FLOAT_PACKED -> smallFloat.decode(readPacked(s, pos));
            case UINT64 -> unsignedToDouble(s.get(JAVA_LONG_UNALIGNED, pos));
            default -> getLong(s, pos);
        };
    }

    /** The imaginary part of a complex element; 0 for real types. */
    double getImag(MemorySegment s, long pos) {
        return switch (kind) {
            case COMPLEX32 -> Float.float16ToFloat(s.get(JAVA_SHORT_UNALIGNED, pos + 2));
            case COMPLEX64 -> s.get(JAVA_FLOAT_UNALIGNED, pos + 4);
            case COMPLEX128 -> s.get(JAVA_DOUBLE_UNALIGNED, pos + 8);
            case UNSUPPORTED -> throw unsupported();
            default -> 0.0;
        };
    }

    /** The element as a long: integers exactly (UINT64 as its two's complement bits), floats truncated. */
    long getLong(MemorySegment s, long pos) {
        return switch (kind) {
            case BOOL -> s.get(JAVA_BYTE, pos) != 0 ? 1 : 0;
            case INT8 -> s.get(JAVA_BYTE, pos);
            case UINT8 -> s.get(JAVA_BYTE, pos) & 0xFFL;
            case INT16 -> s.get(JAVA_SHORT_UNALIGNED, pos);
            case UINT16 -> s.get(JAVA_SHORT_UNALIGNED, pos) & 0xFFFFL;
            case INT32 -> s.get(JAVA_INT_UNALIGNED, pos);
            case UINT32 -> s.get(JAVA_INT_UNALIGNED, pos) & 0xFFFF_FFFFL;
            case INT64, UINT64 -> s.get(JAVA_LONG_UNALIGNED, pos);
            case SUB_INT_BYTE -> extend(s.get(JAVA_BYTE, pos));
            case SUB_INT_PACKED -> extend(readPacked(s, pos));
            case UNSUPPORTED -> throw unsupported();
            default -> (long) getDouble(s, pos);
        };
    }

    /** Stores {@code v} converted to the dtype (a complex element gets imaginary part 0). */
    void setDouble(MemorySegment s, long pos, double v) {
        switch (kind) {
            case FLOAT32 -> s.set(JAVA_FLOAT_UNALIGNED, pos, (float) v);
            case FLOAT64 -> s.set(JAVA_DOUBLE_UNALIGNED, pos, v);
            case FLOAT16 -> s.set(JAVA_SHORT_UNALIGNED, pos, Float.floatToFloat16(narrow(v)));
            case BFLOAT16 -> s.set(JAVA_SHORT_UNALIGNED, pos, (short) SmallFloat.BFLOAT16.encode(narrow(v)));
            case SMALL_FLOAT_BYTE -> s.set(JAVA_BYTE, pos, (byte) smallFloat.encode(narrow(v)));
            case SMALL_FLOAT_PACKED -> writePacked(s, pos, smallFloat.encode(narrow(v)));
            case COMPLEX32, COMPLEX64, COMPLEX128 -> setComplex(s, pos, v, 0.0);
            case BOOL -> s.set(JAVA_BYTE, pos, (byte) (v != 0 ? 1 : 0));
            case UINT64 -> s.set(JAVA_LONG_UNALIGNED, pos, doubleToUnsigned(v));
            default -> setLong(s, pos, (long) v);
        }
    }

    /** Stores {@code v} converted to the dtype; integers keep their low bits, as a C cast does. */
    void setLong(MemorySegment s, long pos, long v) {
        switch (kind) {
            case BOOL -> s.set(JAVA_BYTE, pos, (byte) (v != 0 ? 1 : 0));
            case INT8, UINT8 -> s.set(JAVA_BYTE, pos, (byte) v);
            case INT16, UINT16 -> s.set(JAVA_SHORT_UNALIGNED, pos, (short) v);
            case INT32, UINT32 -> s.set(JAVA_INT_UNALIGNED, pos, (int) v);
            case INT64, UINT64 -> s.set(JAVA_LONG_UNALIGNED, pos, v);
            case SUB_INT_BYTE -> s.set(JAVA_BYTE, pos, (byte) (v & ((1 << bits) - 1)));
            case SUB_INT_PACKED -> writePacked(s, pos, (int) v);
            case UNSUPPORTED -> throw unsupported();
            default -> setDouble(s, pos, (double) v);
        }
    }

    /** Stores a complex value; for real types the imaginary part is dropped. */
    void setComplex(MemorySegment s, long pos, double re, double im) {
        switch (kind) {
            case COMPLEX32 -> {
                s.set(JAVA_SHORT_UNALIGNED, pos, Float.floatToFloat16(narrow(re)));
                s.set(JAVA_SHORT_UNALIGNED, pos + 2, Float.floatToFloat16(narrow(im)));
            }
            case COMPLEX64 -> {
                s.set(JAVA_FLOAT_UNALIGNED, pos, (float) re);
                s.set(JAVA_FLOAT_UNALIGNED, pos + 4, (float) im);
            }
            case COMPLEX128 -> {
                s.set(JAVA_DOUBLE_UNALIGNED, pos, re);
                s.set(JAVA_DOUBLE_UNALIGNED, pos + 8, im);
            }
            default -> setDouble(s, pos, re);
        }
    }

    /** The raw bit pattern of a sub-byte element, packed or padded. */
    int getBits(MemorySegment s, long pos) {
        return isPacked() ? readPacked(s, pos) : s.get(JAVA_BYTE, pos) & ((1 << bits) - 1);
    }

    /** Stores the raw bit pattern of a sub-byte element, packed or padded. */
    void setBits(MemorySegment s, long pos, int value) {
        if (isPacked()) {
            writePacked(s, pos, value);
        } else {
            s.set(JAVA_BYTE, pos, (byte) (value & ((1 << bits) - 1)));
        }
    }

    /** Packed element at bit offset {@code bitPos}: little bit-endian, never straddling a byte for 1/2/4 bits. */
    private int readPacked(MemorySegment s, long bitPos) {
        long byteIndex = bitPos >>> 3;
        int shift = (int) (bitPos & 7);
        int word = s.get(JAVA_BYTE, byteIndex) & 0xFF;
        if (shift + bits > 8) {
            word |= (s.get(JAVA_BYTE, byteIndex + 1) & 0xFF) << 8;
        }
        return (word >>> shift) & ((1 << bits) - 1);
    }

    private void writePacked(MemorySegment s, long bitPos, int value) {
        long byteIndex = bitPos >>> 3;
        int shift = (int) (bitPos & 7);
        int mask = ((1 << bits) - 1) << shift;
        boolean straddles = shift + bits > 8;
        int word = s.get(JAVA_BYTE, byteIndex) & 0xFF;
        if (straddles) {
            word |= (s.get(JAVA_BYTE, byteIndex + 1) & 0xFF) << 8;
        }
        word = (word & ~mask) | ((value << shift) & mask);
        s.set(JAVA_BYTE, byteIndex, (byte) word);
        if (straddles) {
            s.set(JAVA_BYTE, byteIndex + 1, (byte) (word >>> 8));
        }
    }

    private long extend(int raw) {
        int v = raw & ((1 << bits) - 1);
        return signed ? ((long) v << (64 - bits)) >> (64 - bits) : v;
    }

    /**
     * {@code v} as a float rounded to odd: exact when {@code v} is a float, else the neighbour whose
     * last mantissa bit is 1. Types of 16 bits and fewer, rounded to nearest from that float, then
     * get what rounding {@code v} directly would give (no double rounding: float has more than two
     * extra bits for each of them).
     */
    static float narrow(double v) {
        float f = (float) v;
        if (f == v || Float.isNaN(f) || (Float.floatToRawIntBits(f) & 1) != 0) {
            return f;
        }
        if (Float.isInfinite(f)) {
            return Math.copySign(Float.MAX_VALUE, f); // odd: keeps "larger than every float" for the next rounding
        }
        return f > v ? Math.nextDown(f) : Math.nextUp(f);
    }

    private static double unsignedToDouble(long v) {
        return v >= 0 ? v : ((v >>> 1) | (v & 1)) * 2.0;
    }

    private static long doubleToUnsigned(double v) {
        if (v < 0x1p63) {
            return (long) v;
        }
        return v >= 0x1p64 ? -1L : (long) (v - 0x1p63) + Long.MIN_VALUE;
    }
}
