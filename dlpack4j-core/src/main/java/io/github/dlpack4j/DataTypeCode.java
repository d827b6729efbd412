package io.github.dlpack4j;

/** The type codes of DLPack 1.3 ({@code DLDataTypeCode}), with their C values. */
public enum DataTypeCode {
    /** Signed integer, code 0. */
    INT(0),
    /** Unsigned integer, code 1. */
    UINT(1),
    /** IEEE floating point (16, 32 or 64 bits), code 2. */
    FLOAT(2),
    /** Opaque handle, code 3: carried, never interpreted. */
    OPAQUE_HANDLE(3),
    /** bfloat16, code 4. */
    BFLOAT(4),
    /** Complex number of two floats, code 5; {@code bits} counts both parts. */
    COMPLEX(5),
    /** Boolean stored in 8 bits, code 6 (DLPack 0.8). */
    BOOL(6),
    /** FP8 e3m4, code 7 (DLPack 1.1). */
    FLOAT8_E3M4(7),
    /** FP8 e4m3, code 8. */
    FLOAT8_E4M3(8),
    /** FP8 e4m3 with exponent bias 11, finite, unsigned zero, code 9. */
    FLOAT8_E4M3B11FNUZ(9),
    /** FP8 e4m3, finite (no infinity), code 10. */
    FLOAT8_E4M3FN(10),
    /** FP8 e4m3, finite, unsigned zero, code 11. */
    FLOAT8_E4M3FNUZ(11),
    /** FP8 e5m2, code 12. */
    FLOAT8_E5M2(12),
    /** FP8 e5m2, finite, unsigned zero, code 13. */
    FLOAT8_E5M2FNUZ(13),
    /** FP8 e8m0 (a power of two scale), finite, unsigned, code 14. */
    FLOAT8_E8M0FNU(14),
    /** FP6 e2m3, finite, code 15. */
    FLOAT6_E2M3FN(15),
    /** FP6 e3m2, finite, code 16. */
    FLOAT6_E3M2FN(16),
    /** FP4 e2m1, finite, code 17. */
    FLOAT4_E2M1FN(17);

    private static final DataTypeCode[] BY_CODE = values();

    private final int code;

    DataTypeCode(int code) {
        this.code = code;
    }

    /** {@return the C enum value} */
    public int code() {
        return code;
    }

    /**
     * The type code with the given C value.
     *
     * @param code a {@code DLDataTypeCode} value
     * @return the constant for that value
     * @throws DlpackException if DLPack 1.3 has no such code
     */
    public static DataTypeCode of(int code) {
        if (code < 0 || code >= BY_CODE.length) {
            throw new DlpackException("dtype.code = " + code + ": not a DLPack 1.3 type code");
        }
        return BY_CODE[code];
    }

    /** The only bit width a code allows, or 0 when it allows several. */
    int fixedBits() {
        return switch (this) {
            case BFLOAT -> 16;
            case BOOL -> 8;
            case FLOAT8_E3M4, FLOAT8_E4M3, FLOAT8_E4M3B11FNUZ, FLOAT8_E4M3FN, FLOAT8_E4M3FNUZ,
                 FLOAT8_E5M2, FLOAT8_E5M2FNUZ, FLOAT8_E8M0FNU -> 8;
            case FLOAT6_E2M3FN, FLOAT6_E3M2FN -> 6;
            case FLOAT4_E2M1FN -> 4;
            default -> 0;
        };
    }
}
