package io.github.dlpack4j;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Checks {@link SmallFloat} against tables that ml_dtypes wrote (src/test/resources/smallfloat,
 * made by scripts/dev/gen_smallfloat_golden.py; the file names are ml_dtypes' type names).
 */
class SmallFloatTest {

    /** The types of 8 bits or fewer: ml_dtypes decodes every pattern and encodes every float32 for these. */
    private static final List<SmallFloat> NARROW =
            Arrays.stream(SmallFloat.values()).filter(f -> f.bits() <= 8).toList();

    private static final Set<String> CATEGORIES =
            Set.of("exact", "tie", "near", "tiny", "overflow", "special", "random");

    @Test
    void reportsTheWidthOfEachFormat() {
        assertThat(Arrays.stream(SmallFloat.values()).map(f -> f + "=" + f.bits()))
                .containsExactly("FLOAT16=16", "BFLOAT16=16", "E3M4=8", "E4M3=8", "E4M3B11FNUZ=8", "E4M3FN=8",
                        "E4M3FNUZ=8", "E5M2=8", "E5M2FNUZ=8", "E8M0FNU=8", "E2M3FN=6", "E3M2FN=6", "E2M1FN=4");
    }

    @Test
    void decodesEveryPatternOfEachFormatAsMlDtypesDoes() {
        List<String> mismatches = new ArrayList<>();
        for (SmallFloat format : NARROW) {
            List<String[]> rows = csv(mlDtypesName(format) + ".decode.csv");
            assertThat(rows).as("%s decode table", format).hasSize(1 << format.bits());
            for (String[] row : rows) {
                int pattern = hex(row[0]);
                float expected = Float.intBitsToFloat(hex(row[1]));
                float actual = format.decode(pattern);
                if (!sameFloat(actual, expected)) {
                    mismatches.add(String.format("%s.decode(0x%x) = %s (0x%08x), ml_dtypes: %s (0x%08x)", format,
                            pattern, actual, Float.floatToRawIntBits(actual), expected, hex(row[1])));
                }
            }
        }
        assertNone(mismatches);
    }

    @Test
    void decodesFloat16AsIeeeBinary16() {
        for (int p = 0; p < 1 << 16; p++) {
            int exponent = p >>> 10 & 0x1F;
            int mantissa = p & 0x3FF;
            float magnitude = exponent == 0x1F ? (mantissa == 0 ? Float.POSITIVE_INFINITY : Float.NaN)
                    : exponent == 0 ? Math.scalb((float) mantissa, -24)
                    : Math.scalb((float) (0x400 | mantissa), exponent - 25);
            float expected = (p & 0x8000) != 0 ? -magnitude : magnitude;
            assertThat(sameFloat(SmallFloat.FLOAT16.decode(p), expected))
                    .as("FLOAT16.decode(0x%04x) = %s, expected %s", p, SmallFloat.FLOAT16.decode(p), expected)
                    .isTrue();
        }
    }

    @Test
    void decodesBfloat16AsTheUpperHalfOfAFloat32() {
        for (int p = 0; p < 1 << 16; p++) {
            assertThat(Float.floatToRawIntBits(SmallFloat.BFLOAT16.decode(p)))
                    .as("BFLOAT16.decode(0x%04x)", p)
                    .isEqualTo(p << 16);
        }
    }

    @Test
    void decodeIgnoresTheBitsAboveThePattern() {
        for (SmallFloat format : SmallFloat.values()) {
            for (int p = 0; p < 1 << format.bits(); p++) {
                int junk = 0xA5A5_A5A5 << format.bits();
                assertThat(sameFloat(format.decode(p | junk), format.decode(p)))
                        .as("%s.decode(0x%x) vs 0x%x", format, p | junk, p)
                        .isTrue();
            }
        }
    }

    @Test
    void encodeReturnsEveryRepresentableValueToItsPattern() {
        assertNone(encodeMismatches("exact"));
    }

    @Test
    void encodeRoundsTiesToEven() {
        assertNone(encodeMismatches("tie"));
    }

    @Test
    void encodeRoundsValuesOneUlpBesideATieToTheNearerPattern() {
        assertNone(encodeMismatches("near"));
    }

    @Test
    void encodeRoundsTinyValuesToSubnormalsOrZeroAsMlDtypesDoes() {
        assertNone(encodeMismatches("tiny"));
    }

    @Test
    void encodeHandlesValuesBeyondTheLargestFiniteOneAsMlDtypesDoes() {
        assertNone(encodeMismatches("overflow"));
    }

    @Test
    void encodeMapsZerosInfinitiesAndNansAsMlDtypesDoes() {
        assertNone(encodeMismatches("special"));
    }

    @Test
    void encodeMatchesMlDtypesOnRandomValuesOfManyMagnitudes() {
        assertNone(encodeMismatches("random"));
    }

    @Test
    void goldenEncodeTablesCoverEveryCategoryForEveryFormat() {
        for (SmallFloat format : SmallFloat.values()) {
            List<String[]> rows = csv(mlDtypesName(format) + ".encode.csv");
            Set<String> seen = new TreeSet<>();
            rows.forEach(row -> seen.add(row[2]));
            assertThat(seen).as("%s encode table categories", format).isEqualTo(new TreeSet<>(CATEGORIES));
            assertThat(rows).as("%s encode table", format).hasSizeGreaterThan(1000);
        }
    }

    @Test
    void encodeChangesPatternExactlyWhereMlDtypesDoes() {
        List<String> mismatches = new ArrayList<>();
        for (SmallFloat format : NARROW) {
            long[][] runs = runs(format);
            assertThat(runs[0][0]).as("%s runs start at 0", format).isZero();
            for (int i = 0; i < runs.length; i++) {
                long first = runs[i][0];
                long last = i + 1 < runs.length ? runs[i + 1][0] - 1 : 0xFFFF_FFFFL;
                for (long input : new long[] {first, first + (last - first) / 2, last}) {
                    checkEncode(format, (int) input, (int) runs[i][1], mismatches);
                }
            }
        }
        assertNone(mismatches);
    }

    /** All 2^32 float32 inputs for each type of 8 bits or fewer; about a minute. */
    @Test
    @EnabledIfSystemProperty(named = "dlpack4j.smallfloat.exhaustive", matches = "true")
    void encodesEveryFloat32AsMlDtypesDoes() {
        List<String> mismatches = Collections.synchronizedList(new ArrayList<>());
        NARROW.parallelStream().forEach(format -> {
            long[][] runs = runs(format);
            List<String> local = new ArrayList<>();
            long wrong = 0;
            int run = 0;
            for (long input = 0; input <= 0xFFFF_FFFFL; input++) {
                if (run + 1 < runs.length && input == runs[run + 1][0]) {
                    run++;
                }
                if (format.encode(Float.intBitsToFloat((int) input)) != runs[run][1]) {
                    if (wrong++ < 20) {
                        checkEncode(format, (int) input, (int) runs[run][1], local);
                    }
                }
            }
            if (wrong > 20) {
                local.add(String.format("%s: %d wrong in all", format, wrong));
            }
            mismatches.addAll(local);
        });
        assertNone(mismatches);
    }

    @Test
    void encodeSetsNoBitsAboveThePattern() {
        Random random = new Random(42);
        for (SmallFloat format : SmallFloat.values()) {
            for (int i = 0; i < 100_000; i++) {
                int input = random.nextInt();
                assertThat(format.encode(Float.intBitsToFloat(input)) >>> format.bits())
                        .as("%s.encode(0x%08x)", format, input)
                        .isZero();
            }
        }
    }

    @Test
    void encodeOfADecodedPatternDecodesToTheSameValue() {
        for (SmallFloat format : SmallFloat.values()) {
            for (int p = 0; p < 1 << format.bits(); p++) {
                float value = format.decode(p);
                if (!Float.isNaN(value)) {
                    float again = format.decode(format.encode(value));
                    assertThat(Float.floatToRawIntBits(again))
                            .as("%s: decode(encode(decode(0x%x) = %s)) = %s", format, p, value, again)
                            .isEqualTo(Float.floatToRawIntBits(value));
                }
            }
        }
    }

    @Test
    void encodeOverflowsToInfinityNanOrTheMaximumAsMlDtypesDoesForEachKindOfFormat() {
        float big = 1e6f;
        assertThat(SmallFloat.E5M2.encode(big)).as("E5M2: +inf").isEqualTo(0x7C);
        assertThat(SmallFloat.E5M2.encode(-big)).as("E5M2: -inf").isEqualTo(0xFC);
        assertThat(SmallFloat.E4M3.encode(248f)).as("E4M3: tie above 240 goes to inf").isEqualTo(0x78);
        assertThat(SmallFloat.E4M3FN.encode(464f)).as("E4M3FN: tie above 448 stays at 448").isEqualTo(0x7E);
        assertThat(SmallFloat.E4M3FN.encode(Math.nextUp(464f))).as("E4M3FN: then NaN").isEqualTo(0x7F);
        assertThat(SmallFloat.E4M3FN.encode(-big)).as("E4M3FN: -NaN").isEqualTo(0xFF);
        assertThat(SmallFloat.E4M3FNUZ.encode(-big)).as("E4M3FNUZ: the one NaN").isEqualTo(0x80);
        assertThat(SmallFloat.E2M1FN.encode(big)).as("E2M1FN: saturates").isEqualTo(0x7);
        assertThat(SmallFloat.E2M1FN.encode(Float.NEGATIVE_INFINITY)).as("E2M1FN: -inf saturates").isEqualTo(0xF);
        assertThat(SmallFloat.E8M0FNU.encode(Float.MAX_VALUE)).as("E8M0FNU: NaN").isEqualTo(0xFF);
        assertThat(SmallFloat.BFLOAT16.encode(Float.MAX_VALUE)).as("BFLOAT16: +inf").isEqualTo(0x7F80);
        assertThat(SmallFloat.FLOAT16.encode(65520f)).as("FLOAT16: tie above 65504 goes to inf").isEqualTo(0x7C00);
    }

    @Test
    void encodeKeepsNegativeZeroOnlyWhereTheFormatHasIt() {
        float tinyNegative = -Float.MIN_VALUE;
        assertThat(SmallFloat.E4M3FN.encode(tinyNegative)).isEqualTo(0x80);
        assertThat(SmallFloat.E2M3FN.encode(-0f)).isEqualTo(0x20);
        assertThat(SmallFloat.E4M3FNUZ.encode(tinyNegative)).isZero();
        assertThat(SmallFloat.E5M2FNUZ.encode(-0f)).isZero();
        assertThat(SmallFloat.E8M0FNU.encode(0f)).as("E8M0FNU has no zero").isEqualTo(0xFF);
    }

    @Test
    void encodeTakesNanOfTheMxFormatsToTheOppositelySignedZeroAsMlDtypesDoes() {
        assertThat(SmallFloat.E2M1FN.encode(Float.NaN)).isEqualTo(0x8);
        assertThat(SmallFloat.E3M2FN.encode(Float.intBitsToFloat(0xFFC0_0000))).isZero();
    }

    // ---------------------------------------------------------------------------------------------

    private static List<String> encodeMismatches(String category) {
        List<String> mismatches = new ArrayList<>();
        int checked = 0;
        for (SmallFloat format : SmallFloat.values()) {
            for (String[] row : csv(mlDtypesName(format) + ".encode.csv")) {
                assertThat(CATEGORIES).as("category of %s", Arrays.toString(row)).contains(row[2]);
                if (row[2].equals(category)) {
                    checkEncode(format, hex(row[0]), hex(row[1]), mismatches);
                    checked++;
                }
            }
        }
        assertThat(checked).as("rows of category %s", category).isPositive();
        return mismatches;
    }

    /**
     * Adds a line to {@code mismatches} unless {@code format.encode} of the float32 with bits
     * {@code input} is {@code expected}. For FLOAT16 a NaN may be any NaN (NumPy and the JDK may
     * keep different payload bits); the other types give ml_dtypes' canonical NaN pattern.
     */
    private static void checkEncode(SmallFloat format, int input, int expected, List<String> mismatches) {
        float value = Float.intBitsToFloat(input);
        int actual = format.encode(value);
        boolean ok = actual == expected
                || (format == SmallFloat.FLOAT16
                        && Float.isNaN(format.decode(expected)) && Float.isNaN(format.decode(actual)));
        if (!ok) {
            mismatches.add(String.format("%s.encode(%s = 0x%08x) = 0x%x, ml_dtypes: 0x%x", format, value, input,
                    actual, expected));
        }
    }

    private static long[][] runs(SmallFloat format) {
        return csv(mlDtypesName(format) + ".runs.csv").stream()
                .map(row -> new long[] {Integer.toUnsignedLong(hex(row[0])), hex(row[1])})
                .toArray(long[][]::new);
    }

    private static void assertNone(List<String> mismatches) {
        List<String> first = mismatches.subList(0, Math.min(20, mismatches.size()));
        assertThat(mismatches.size())
                .as("mismatches (the first %d of them below)%n%s%n", first.size(), String.join("\n", first))
                .isZero();
    }

    /** The same float, bit for bit, or both NaN. */
    private static boolean sameFloat(float a, float b) {
        return Float.floatToRawIntBits(a) == Float.floatToRawIntBits(b) || Float.isNaN(a) && Float.isNaN(b);
    }

    private static int hex(String s) {
        return Integer.parseUnsignedInt(s, 16);
    }

    private static String mlDtypesName(SmallFloat format) {
        return switch (format) {
            case FLOAT16 -> "float16";
            case BFLOAT16 -> "bfloat16";
            case E3M4, E4M3, E4M3B11FNUZ, E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0FNU ->
                    "float8_" + format.name().toLowerCase(java.util.Locale.ROOT);
            case E2M3FN, E3M2FN -> "float6_" + format.name().toLowerCase(java.util.Locale.ROOT);
            case E2M1FN -> "float4_e2m1fn";
        };
    }

    /** The rows of a CSV under /smallfloat/, without its header line. */
    private static List<String[]> csv(String name) {
        String resource = "/smallfloat/" + name;
        try (InputStream in = SmallFloatTest.class.getResourceAsStream(resource)) {
            assertThat(in).as("test resource %s", resource).isNotNull();
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            return reader.lines().skip(1).filter(line -> !line.isBlank()).map(line -> line.split(",")).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
