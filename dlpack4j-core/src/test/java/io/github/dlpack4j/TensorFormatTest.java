package io.github.dlpack4j;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.IntStream;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link Tensor#toString()}'s element text against NumPy 2.4's {@code np.array2string(a,
 * separator=', ')} with default print options; every expected body below was printed by NumPy
 * (except the bfloat16 and FP8 ones, which NumPy cannot format as floats).
 */
@ExtendWith(NoLeaks.class)
class TensorFormatTest {

    /** A 1-d tensor of {@code dtype} holding {@code values}, each rounded to the dtype. */
    private static Tensor vector(DataType dtype, double... values) {
        Tensor t = Tensor.zeros(dtype, values.length);
        for (int i = 0; i < values.length; i++) {
            t.setDouble(values[i], i);
        }
        return t;
    }

    private static String header(String shape, String dtype) {
        return "Tensor(shape=" + shape + ", dtype=" + dtype + ", device=cpu:0)\n";
    }

    @Test
    void floatsArePositionalAndAlignedOnTheDecimalPoint() {
        try (Tensor x = Tensor.of(new float[] {1, 2.5f, 3, 4, 5, 6}, 2, 3);
             Tensor thirds = Tensor.of(new double[] {1.0 / 3, 2.0 / 3, 10})) {
            assertThat(x.toString()).isEqualTo(header("[2, 3]", "float32") + "[[1. , 2.5, 3. ],\n [4. , 5. , 6. ]]");
            assertThat(thirds.toString())
                    .isEqualTo(header("[3]", "float64") + "[ 0.33333333,  0.66666667, 10.        ]");
        }
    }

    @Test
    void smallOrWidelySpreadFloatsSwitchTheWholeArrayToScientific() {
        try (Tensor tiny = Tensor.of(new double[] {1e-5, 1, 0.5});
             Tensor padded = Tensor.of(new float[] {1e20f, 1e16f, -2.5f});
             Tensor hugeExponent = Tensor.of(new double[] {1e-300, 1})) {
            assertThat(tiny.toString()).isEqualTo(header("[3]", "float64") + "[1.e-05, 1.e+00, 5.e-01]");
            assertThat(padded.toString()).isEqualTo(header("[3]", "float32") + "[ 1.0e+20,  1.0e+16, -2.5e+00]");
            assertThat(hugeExponent.toString()).isEqualTo(header("[2]", "float64") + "[1.e-300, 1.e+000]");
        }
    }

    @Test
    void theScientificCutOffDependsOnTheFloatTypeAsInNumpy2() {
        try (Tensor f32 = Tensor.of(new float[] {2e6f, 1e6f});
             Tensor f64 = Tensor.of(new double[] {2e6, 1e6});
             Tensor f16 = vector(DataType.FLOAT16, 1000, 1)) {
            assertThat(f32.toString()).isEqualTo(header("[2]", "float32") + "[2.e+06, 1.e+06]");
            assertThat(f64.toString()).isEqualTo(header("[2]", "float64") + "[2000000., 1000000.]");
            assertThat(f16.toString()).isEqualTo(header("[2]", "float16") + "[1.e+03, 1.e+00]");
        }
    }

    @Test
    void digitsAreTheShortestThatIdentifyTheValueInItsOwnPrecision() {
        try (Tensor f16 = vector(DataType.FLOAT16, 0.1, 0.2, 0.3);
             Tensor f32 = Tensor.of(new float[] {0.1f, 1f / 3});
             Tensor f64 = Tensor.of(new double[] {0.1, 1.0 / 3})) {
            assertThat(f16.toString()).isEqualTo(header("[3]", "float16") + "[0.1, 0.2, 0.3]");
            assertThat(f32.toString()).isEqualTo(header("[2]", "float32") + "[0.1       , 0.33333334]");
            assertThat(f64.toString()).isEqualTo(header("[2]", "float64") + "[0.1       , 0.33333333]");
        }
    }

    @Test
    void scientificMantissasArePaddedWithTheDigitsOfTheExactValue() {
        try (Tensor x = Tensor.of(new float[] {0.7f, 3.5128103e-06f})) {
            assertThat(x.toString()).isEqualTo(header("[2]", "float32") + "[6.9999999e-01, 3.5128103e-06]");
        }
    }

    @Test
    void negativeZeroKeepsItsSign() {
        try (Tensor x = Tensor.of(new double[] {0, -0.0, 1.5})) {
            assertThat(x.toString()).isEqualTo(header("[3]", "float64") + "[ 0. , -0. ,  1.5]");
        }
    }

    @Test
    void nanAndInfinitiesAreRightAligned() {
        try (Tensor positional = Tensor.of(new double[] {Double.NaN, 1.5, Double.POSITIVE_INFINITY,
                    Double.NEGATIVE_INFINITY});
             Tensor scientific = Tensor.of(new double[] {Double.NaN, 1e-5, Double.POSITIVE_INFINITY});
             Tensor onlyNonFinite = Tensor.of(new double[] {Double.NaN, Double.POSITIVE_INFINITY})) {
            assertThat(positional.toString()).isEqualTo(header("[4]", "float64") + "[ nan,  1.5,  inf, -inf]");
            assertThat(scientific.toString()).isEqualTo(header("[3]", "float64") + "[   nan, 1.e-05,    inf]");
            assertThat(onlyNonFinite.toString()).isEqualTo(header("[2]", "float64") + "[nan, inf]");
        }
    }

    @Test
    void integersAreRightAlignedToTheWidestElement() {
        try (Tensor x = Tensor.of(new int[] {1, -20, 300});
             Tensor bytes = Tensor.zeros(DataType.UINT8, 2, 2)) {
            bytes.setLong(1, 0, 0);
            bytes.setLong(20, 0, 1);
            bytes.setLong(255, 1, 0);
            bytes.setLong(4, 1, 1);
            assertThat(x.toString()).isEqualTo(header("[3]", "int32") + "[  1, -20, 300]");
            assertThat(bytes.toString()).isEqualTo(header("[2, 2]", "uint8") + "[[  1,  20],\n [255,   4]]");
        }
    }

    @Test
    void uint64PrintsUnsigned() {
        try (Tensor x = Tensor.zeros(DataType.UINT64, 2)) {
            x.setLong(-1L, 1);
            assertThat(x.toString())
                    .isEqualTo(header("[2]", "uint64") + "[                   0, 18446744073709551615]");
        }
    }

    @Test
    void boolsArePaddedSoTrueAndFalseAlignExceptInAScalar() {
        try (Tensor x = Tensor.of(new boolean[] {true, false});
             Tensor scalar = Tensor.zeros(DataType.BOOL)) {
            scalar.setBoolean(true);
            assertThat(x.toString()).isEqualTo(header("[2]", "bool") + "[ True, False]");
            assertThat(scalar.toString()).isEqualTo(header("[]", "bool") + "True");
        }
    }

    @Test
    void complexNumbersFormatTheirRealAndImaginaryPartsAsFloatArrays() {
        try (Tensor x = Tensor.zeros(DataType.COMPLEX128, 2);
             Tensor mixed = Tensor.zeros(DataType.COMPLEX64, 3)) {
            x.setComplex(1.5, -2.5, 0);
            x.setComplex(-1, 0.5, 1);
            mixed.setComplex(1, 2, 0);
            mixed.setComplex(Double.NaN, Double.NEGATIVE_INFINITY, 1);
            mixed.setComplex(0, 1e-5, 2);
            assertThat(x.toString()).isEqualTo(header("[2]", "complex128") + "[ 1.5-2.5j, -1. +0.5j]");
            assertThat(mixed.toString())
                    .isEqualTo(header("[3]", "complex64") + "[ 1.+2.e+00j, nan   -infj,  0.+1.e-05j]");
        }
    }

    @Test
    void scalarsPrintTheBareElement() {
        try (Tensor f = Tensor.zeros(DataType.FLOAT64);
             Tensor tiny = Tensor.zeros(DataType.FLOAT64);
             Tensor i = Tensor.zeros(DataType.INT16)) {
            f.setDouble(3.5);
            tiny.setDouble(1e-5);
            i.setLong(-7);
            assertThat(f.toString()).isEqualTo(header("[]", "float64") + "3.5");
            assertThat(tiny.toString()).isEqualTo(header("[]", "float64") + "1.e-05");
            assertThat(i.toString()).isEqualTo(header("[]", "int16") + "-7");
        }
    }

    @Test
    void emptyTensorsPrintEmptyBracketsWhateverTheirShape() {
        try (Tensor flat = Tensor.zeros(DataType.FLOAT64, 0);
             Tensor rows = Tensor.zeros(DataType.FLOAT64, 2, 0)) {
            assertThat(flat.toString()).isEqualTo(header("[0]", "float64") + "[]");
            assertThat(rows.toString()).isEqualTo(header("[2, 0]", "float64") + "[]");
        }
    }

    @Test
    void blocksOfThreeDimensionalTensorsAreSeparatedByBlankLines() {
        try (Tensor ints = Tensor.of(LongStream.range(0, 12).toArray(), 2, 2, 3);
             Tensor quarters = Tensor.of(IntStream.range(0, 12).mapToDouble(k -> k / 4.0).toArray(), 2, 2, 3)) {
            assertThat(ints.toString()).isEqualTo(header("[2, 2, 3]", "int64")
                    + "[[[ 0,  1,  2],\n  [ 3,  4,  5]],\n\n [[ 6,  7,  8],\n  [ 9, 10, 11]]]");
            assertThat(quarters.toString()).isEqualTo(header("[2, 2, 3]", "float64")
                    + "[[[0.  , 0.25, 0.5 ],\n  [0.75, 1.  , 1.25]],\n\n [[1.5 , 1.75, 2.  ],\n  [2.25, 2.5 , 2.75]]]");
        }
    }

    @Test
    void longRowsWrapAtSeventyFiveCharacters() {
        try (Tensor x = Tensor.of(IntStream.range(0, 30).mapToDouble(k -> k).toArray())) {
            assertThat(x.toString()).isEqualTo(header("[30]", "float64")
                    + "[ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13., 14.,\n"
                    + " 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27., 28., 29.]");
        }
    }

    @Test
    void largeOneDimensionalTensorsShowThreeItemsAtEachEnd() {
        try (Tensor x = Tensor.of(IntStream.range(0, 2000).toArray())) {
            assertThat(x.toString()).isEqualTo(header("[2000]", "int32") + "[   0,    1,    2, ..., 1997, 1998, 1999]");
        }
    }

    @Test
    void largeTwoDimensionalTensorsSummariseRowsAndColumnsAndFormatOnlyWhatIsShown() {
        try (Tensor x = Tensor.of(IntStream.range(0, 2000).mapToDouble(k -> k).toArray(), 40, 50)) {
            assertThat(x.toString()).isEqualTo(header("[40, 50]", "float64")
                    + "[[0.000e+00, 1.000e+00, 2.000e+00, ..., 4.700e+01, 4.800e+01, 4.900e+01],\n"
                    + " [5.000e+01, 5.100e+01, 5.200e+01, ..., 9.700e+01, 9.800e+01, 9.900e+01],\n"
                    + " [1.000e+02, 1.010e+02, 1.020e+02, ..., 1.470e+02, 1.480e+02, 1.490e+02],\n"
                    + " ...,\n"
                    + " [1.850e+03, 1.851e+03, 1.852e+03, ..., 1.897e+03, 1.898e+03, 1.899e+03],\n"
                    + " [1.900e+03, 1.901e+03, 1.902e+03, ..., 1.947e+03, 1.948e+03, 1.949e+03],\n"
                    + " [1.950e+03, 1.951e+03, 1.952e+03, ..., 1.997e+03, 1.998e+03, 1.999e+03]]");
        }
    }

    @Test
    void largeThreeDimensionalTensorsKeepBlankLinesBetweenSummarisedBlocks() {
        try (Tensor x = Tensor.zeros(DataType.INT8, 3, 4, 300)) {
            String block = "[[0, 0, 0, ..., 0, 0, 0],\n  [0, 0, 0, ..., 0, 0, 0],\n"
                    + "  [0, 0, 0, ..., 0, 0, 0],\n  [0, 0, 0, ..., 0, 0, 0]]";
            assertThat(x.toString()).isEqualTo(header("[3, 4, 300]", "int8")
                    + "[" + block + ",\n\n " + block + ",\n\n " + block + "]");
        }
    }

    @Test
    void bfloat16AndFp8UseTheShortestDigitsOfTheirOwnPrecision() {
        // no NumPy oracle here (ml_dtypes prints with str): NumPy's float rules with each type's spacing
        try (Tensor bf16 = vector(DataType.BFLOAT16, 0.1, 1, 2.5);
             Tensor e4m3 = vector(DataType.FLOAT8_E4M3FN, 0.5, 1.5, 448, Double.NaN);
             Tensor rounded = vector(DataType.FLOAT8_E4M3FN, 0.1, 1.5, 3);
             Tensor fp4 = vector(DataType.FLOAT4_E2M1FN, 0, 0.5, -6)) {
            assertThat(bf16.toString()).isEqualTo(header("[3]", "bfloat16") + "[0.1, 1. , 2.5]");
            assertThat(e4m3.toString())
                    .isEqualTo(header("[4]", "float8_e4m3fn") + "[  0.5,   1.5, 448. ,   nan]");
            // 0.1 is stored as 0.1015625, and 0.1 is the shortest decimal that rounds back to it
            assertThat(rounded.toString()).isEqualTo(header("[3]", "float8_e4m3fn") + "[0.1, 1.5, 3. ]");
            assertThat(fp4.toString()).isEqualTo(header("[3]", "float4_e2m1fn") + "[ 0. ,  0.5, -6. ]");
        }
    }

}
