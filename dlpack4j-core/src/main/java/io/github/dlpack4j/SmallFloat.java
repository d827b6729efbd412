package io.github.dlpack4j;

/**
 * Converts between {@code float} and the bit patterns of DLPack's low-precision floating-point
 * types: IEEE binary16, bfloat16, and the 8-, 6- and 4-bit types of DLPack 1.3.
 *
 * <p>The semantics are those of <a href="https://github.com/jax-ml/ml_dtypes">ml_dtypes</a>
 * (through which NumPy, JAX and PyTorch interoperate), bit for bit: {@link #decode} is exact, and
 * {@link #encode} rounds to nearest, ties to even, with ml_dtypes' choices for the values a type
 * cannot hold (each constant says which). SmallFloatTest checks both against tables that ml_dtypes
 * wrote (scripts/dev/gen_smallfloat_golden.py).
 *
 * <p>Naming: {@code EeMm} has {@code e} exponent and {@code m} stored mantissa bits, bias {@code
 * 2^(e-1) - 1} unless {@code B} gives it; {@code FN} means finite (no infinities), {@code UZ}
 * unsigned zero (no -0; the pattern of -0 is the only NaN), {@code U} unsigned. Unless said
 * otherwise a type has a sign bit, subnormals, and -0.
 *
 * <p>Both methods are allocation-free and branch-light, meant for per-element loops: decoding a
 * type of 8 bits or fewer is one table lookup; encoding is a few integer operations (and one float
 * addition for results that are subnormal in the target type).
 */
enum SmallFloat {
    /** IEEE 754 binary16: bias 15, 10 mantissa bits, inf and NaN, -0. Uses the JDK's conversions. */
    FLOAT16(16, 5, 10, 15, Kind.IEEE),
    /**
     * bfloat16, the upper half of a binary32: bias 127, 7 mantissa bits, inf and NaN, -0. Encoding
     * rounds to nearest even; a NaN becomes the quiet NaN 0x7FC0 or 0xFFC0 of its sign, as in
     * ml_dtypes.
     */
    BFLOAT16(16, 8, 7, 127, Kind.IEEE),
    /** float8_e3m4: bias 3, inf (0x70) and NaN (exponent 111, mantissa not 0), -0; max 15.5. */
    E3M4(8, 3, 4, 3, Kind.IEEE),
    /** float8_e4m3: bias 7, inf (0x78) and NaN (exponent 1111, mantissa not 0), -0; max 240. */
    E4M3(8, 4, 3, 7, Kind.IEEE),
    /** float8_e4m3b11fnuz: bias 11, no inf, one NaN (0x80), no -0; max 30. */
    E4M3B11FNUZ(8, 4, 3, 11, Kind.FNUZ),
    /** float8_e4m3fn (OCP E4M3): bias 7, no inf, NaN 0x7F and 0xFF only, -0; max 448. */
    E4M3FN(8, 4, 3, 7, Kind.FN),
    /** float8_e4m3fnuz: bias 8, no inf, one NaN (0x80), no -0; max 240. */
    E4M3FNUZ(8, 4, 3, 8, Kind.FNUZ),
    /** float8_e5m2 (OCP E5M2): bias 15, inf (0x7C) and NaN (exponent 11111, mantissa not 0), -0; max 57344. */
    E5M2(8, 5, 2, 15, Kind.IEEE),
    /** float8_e5m2fnuz: bias 16, no inf, one NaN (0x80), no -0; max 57344. */
    E5M2FNUZ(8, 5, 2, 16, Kind.FNUZ),
    /**
     * float8_e8m0fnu (OCP MX scale): unsigned, exponent only, bias 127: pattern p is 2^(p-127), so
     * 0x00 is 2^-127 and 0xFE is 2^127; no zero, no inf, one NaN (0xFF).
     */
    E8M0FNU(8, 8, 0, 127, Kind.E8M0),
    /** float6_e2m3fn (OCP MX FP6): bias 1, no inf, no NaN, -0; max 7.5. */
    E2M3FN(6, 2, 3, 1, Kind.MX),
    /** float6_e3m2fn (OCP MX FP6): bias 3, no inf, no NaN, -0; max 28. */
    E3M2FN(6, 3, 2, 3, Kind.MX),
    /** float4_e2m1fn (OCP MX FP4): bias 1, no inf, no NaN, -0; max 6. */
    E2M1FN(4, 2, 1, 1, Kind.MX);

    /*
     * What ml_dtypes (0.6) does with what a type cannot hold, and so what encode does:
     *
     *                      +-inf, and finite values      NaN of sign s           -0 and negative values
     *                      rounding past the max         (payload ignored)       rounding to 0
     *   IEEE (E3M4, E4M3,  +-inf                         quiet NaN of sign s      -0
     *    E5M2, BFLOAT16)                                  (exponent ones, top
     *                                                     mantissa bit set)
     *   FN (E4M3FN)        NaN of the sign (0x7F/0xFF)   0x7F / 0xFF              -0
     *   FNUZ               NaN (0x80), either sign       0x80                     +0
     *   MX (E2M3FN, ...)   +-max (saturates)             -0 for a positive NaN,   -0
     *                                                    +0 for a negative one
     *   E8M0 (E8M0FNU)     NaN (0xFF)                    0xFF                     0xFF (NaN), as is
     *                                                                             every negative and 0
     *
     * "Rounding past the max": the value rounds (to nearest even, as if the exponent were
     * unbounded) to a magnitude above the largest finite one, so E4M3FN takes 464 (the tie between
     * 448 and 480) to 448, and anything above 464 to NaN. The MX types have no NaN: ml_dtypes'
     * quiet_NaN() for them is the pattern of -0 and negates it for a negative NaN, which is where the
     * odd signs come from. E8M0FNU rounds with its implicit leading one as the kept bit, so a tie
     * (1.5 * 2^k) always rounds up, to 2^(k+1); and it treats 0x00 like a zero in its subnormal
     * range: inputs up to 2^-127 encode to 0x00 (2^-127), inputs in (2^-127, 2^-126) to 0x01.
     * FLOAT16 is Float.floatToFloat16, which agrees with NumPy's float32 -> float16 cast on every
     * input but signaling NaNs: NumPy keeps them signaling, HotSpot on x86 quiets them (both NaN).
     */

    private enum Kind { IEEE, FN, FNUZ, MX, E8M0 }

    private static final int F32_ABS = 0x7FFF_FFFF;
    private static final int F32_INF = 0x7F80_0000;

    private final int bits;
    private final int mask;
    /** decode of every pattern, for 8 bits and fewer; null for the 16-bit types. */
    private final float[] table;

    // encode: see encode() for how these are used.
    private final int signBit;      // 0 for E8M0FNU
    private final boolean negativeZero;
    private final boolean unsigned;
    private final int shift;        // 23 - mantissa bits
    private final int rebias;       // (bias - 127) << 23: float32 exponent field to target exponent field
    private final int roundHalf;    // (1 << shift - 1) - 1
    private final int forceOdd;     // 1 where ml_dtypes' kept bit is the implicit one (no mantissa bits)
    private final int normalMin;    // float32 bits of the target's smallest normal, 2^(1 - bias)
    private final float magic;      // 2^(23 + 1 - bias - mantissaBits): its ulp is the target's smallest subnormal
    private final int magicBits;
    private final int maxFinite;    // largest finite magnitude pattern
    private final int infPositive, infNegative, nanPositive, nanNegative;

    SmallFloat(int bits, int exponentBits, int mantissaBits, int bias, Kind kind) {
        this.bits = bits;
        this.mask = (1 << bits) - 1;
        this.unsigned = kind == Kind.E8M0;
        this.signBit = unsigned ? 0 : 1 << (bits - 1);
        this.negativeZero = kind != Kind.FNUZ;
        this.shift = 23 - mantissaBits;
        this.rebias = (bias - 127) << 23;
        this.roundHalf = (1 << (shift - 1)) - 1;
        this.forceOdd = mantissaBits == 0 ? 1 : 0;
        this.normalMin = (128 - bias) << 23;
        this.magic = Math.scalb(1f, 24 - bias - mantissaBits);
        this.magicBits = Float.floatToRawIntBits(magic);
        int expOnes = (1 << exponentBits) - 1;
        int top = expOnes << mantissaBits; // exponent all ones, mantissa 0
        int quietNaN = top | 1 << Math.max(mantissaBits - 1, 0);
        switch (kind) {
            case IEEE -> {
                maxFinite = top - 1;
                infPositive = top;
                nanPositive = quietNaN;
                infNegative = top | signBit;
                nanNegative = quietNaN | signBit;
            }
            case FN -> {
                maxFinite = (top | (1 << mantissaBits) - 1) - 1;
                infPositive = nanPositive = maxFinite + 1;
                infNegative = nanNegative = (maxFinite + 1) | signBit;
            }
            case FNUZ -> {
                maxFinite = signBit - 1;
                infPositive = nanPositive = infNegative = nanNegative = signBit;
            }
            case MX -> {
                maxFinite = signBit - 1;
                infPositive = maxFinite;
                infNegative = maxFinite | signBit;
                nanPositive = signBit;
                nanNegative = 0;
            }
            case E8M0 -> {
                maxFinite = mask - 1;
                infPositive = nanPositive = infNegative = nanNegative = mask;
            }
            default -> throw new AssertionError(kind);
        }
        this.table = bits > 8 ? null : decodeTable(bits, exponentBits, mantissaBits, bias, kind);
    }

    private static float[] decodeTable(int bits, int exponentBits, int mantissaBits, int bias, Kind kind) {
        float[] table = new float[1 << bits];
        int signBit = kind == Kind.E8M0 ? 0 : 1 << (bits - 1);
        int mantissaMask = (1 << mantissaBits) - 1;
        int expOnes = (1 << exponentBits) - 1;
        for (int p = 0; p < table.length; p++) {
            int magnitude = p & ~signBit;
            int exponent = magnitude >>> mantissaBits;
            int mantissa = magnitude & mantissaMask;
            boolean negative = (p & signBit) != 0;
            boolean nan = switch (kind) {
                case IEEE -> exponent == expOnes && mantissa != 0;
                case FN -> exponent == expOnes && mantissa == mantissaMask;
                case FNUZ -> p == signBit;
                case MX -> false;
                case E8M0 -> p == 0xFF;
            };
            float value;
            if (nan) {
                value = Float.intBitsToFloat(negative ? 0xFFC0_0000 : 0x7FC0_0000); // as ml_dtypes
            } else if (kind == Kind.IEEE && exponent == expOnes) {
                value = Float.POSITIVE_INFINITY;
            } else if (kind == Kind.E8M0) {
                value = Math.scalb(1f, exponent - bias);
            } else if (exponent == 0) {
                value = Math.scalb((float) mantissa, 1 - bias - mantissaBits);
            } else {
                value = Math.scalb((float) (mantissa | 1 << mantissaBits), exponent - bias - mantissaBits);
            }
            table[p] = negative && !nan ? -value : value;
        }
        return table;
    }

    /** The width of a pattern: 16, 8, 6 or 4. */
    int bits() {
        return bits;
    }

    /** The value of the pattern in the low {@link #bits()} bits of {@code bits}; higher bits are ignored. */
    float decode(int bits) {
        float[] t = table;
        if (t != null) {
            return t[bits & mask];
        }
        return this == FLOAT16 ? Float.float16ToFloat((short) bits) : Float.intBitsToFloat(bits << 16);
    }

    /**
     * The pattern nearest to {@code value} (ties to even), in the low {@link #bits()} bits of the
     * result, the others 0; infinities, NaN and values out of range as ml_dtypes does (see the
     * constants).
     */
    int encode(float value) {
        if (table == null) {
            return this == FLOAT16 ? Float.floatToFloat16(value) & 0xFFFF : encodeBfloat16(value);
        }
        int in = Float.floatToRawIntBits(value);
        int abs = in & F32_ABS;
        boolean negative = in < 0;
        if (abs >= F32_INF) {
            return abs == F32_INF
                    ? negative ? infNegative : infPositive
                    : negative ? nanNegative : nanPositive;
        }
        if (unsigned && (negative || abs == 0)) {
            return nanPositive;
        }
        int magnitude;
        if (abs >= normalMin) {
            // Rebias the exponent field and round away the low `shift` bits to nearest even; a carry
            // out of the mantissa correctly bumps the exponent.
            int rebased = abs + rebias;
            magnitude = (rebased + roundHalf + (((rebased >>> shift) | forceOdd) & 1)) >>> shift;
            if (magnitude > maxFinite) {
                return negative ? infNegative : infPositive;
            }
        } else {
            // Subnormal (or zero, or the smallest normal after rounding up) in the target: adding a
            // float whose ulp is the target's smallest subnormal makes the FPU round to nearest even,
            // and leaves the multiple of that ulp in the low bits.
            magnitude = Float.floatToRawIntBits(Float.intBitsToFloat(abs) + magic) - magicBits;
        }
        if (!negative) {
            return magnitude;
        }
        return magnitude == 0 && !negativeZero ? 0 : magnitude | signBit;
    }

    private static int encodeBfloat16(float value) {
        int in = Float.floatToRawIntBits(value);
        if ((in & F32_ABS) > F32_INF) {
            return (in >>> 16 & 0x8000) | 0x7FC0;
        }
        return (in + 0x7FFF + (in >>> 16 & 1)) >>> 16;
    }
}
