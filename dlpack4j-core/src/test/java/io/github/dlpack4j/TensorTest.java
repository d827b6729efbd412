package io.github.dlpack4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

@ExtendWith(NoLeaks.class)
class TensorTest {
    static List<DataType> numericDtypes() {
        return List.of(DataType.BOOL, DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64, DataType.UINT8,
                DataType.UINT16, DataType.UINT32, DataType.UINT64, DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT32,
                DataType.FLOAT64, DataType.COMPLEX64, DataType.COMPLEX128, new DataType(DataTypeCode.COMPLEX, 32, 1),
                DataType.FLOAT8_E3M4, DataType.FLOAT8_E4M3, DataType.FLOAT8_E4M3B11FNUZ, DataType.FLOAT8_E4M3FN,
                DataType.FLOAT8_E4M3FNUZ, DataType.FLOAT8_E5M2, DataType.FLOAT8_E5M2FNUZ, DataType.FLOAT8_E8M0FNU,
                DataType.FLOAT6_E2M3FN, DataType.FLOAT6_E3M2FN, DataType.FLOAT4_E2M1FN,
                new DataType(DataTypeCode.INT, 4, 1), new DataType(DataTypeCode.UINT, 2, 1),
                new DataType(DataTypeCode.INT, 1, 1));
    }

    /** A value every dtype represents exactly: 1 (bool), small integers, 2 for the power-of-two scale. */
    static double exampleValue(DataType t, int i) {
        return switch (t.code()) {
            case BOOL -> i % 2;
            case FLOAT8_E8M0FNU -> Math.pow(2, i % 5 - 2);
            case UINT -> i % (1 << Math.min(t.bits(), 16));
            case INT -> t.bits() == 1 ? -(i % 2) : i % (1 << (Math.min(t.bits(), 16) - 1)) - (t.bits() < 8 ? 0 : 3);
            case FLOAT4_E2M1FN -> new double[] {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -6}[i % 10];
            case FLOAT6_E2M3FN, FLOAT6_E3M2FN -> new double[] {0, 0.5, 1, 1.5, 2, 3, -4, 6}[i % 8];
            default -> (i % 7) - 3 + 0.5;
        };
    }

    @ParameterizedTest
    @MethodSource("numericDtypes")
    void everyDtypeStoresAndReadsBackValuesItRepresents(DataType t) {
        try (Tensor x = Tensor.zeros(t, 3, 5)) {
            for (int i = 0; i < 15; i++) {
                x.setDouble(exampleValue(t, i), i / 5, i % 5);
            }
            for (int i = 0; i < 15; i++) {
                assertThat(x.getDouble(i / 5, i % 5)).as("%s element %d", t, i).isEqualTo(exampleValue(t, i));
            }
            double[] all = x.toDoubleArray();
            for (int i = 0; i < 15; i++) {
                assertThat(all[i]).isEqualTo(exampleValue(t, i));
            }
        }
    }

    @Test
    void packedSubByteElementsSitLittleBitEndianInTheBytes() {
        try (Tensor x = Tensor.zeros(DataType.FLOAT4_E2M1FN, 3)) {
            x.setDouble(1.0, 0);  // e2m1 pattern 0b0010
            x.setDouble(-6.0, 1); // 0b1111
            x.setDouble(0.5, 2);  // 0b0001
            assertThat(x.data().byteSize()).isEqualTo(2);
            assertThat(x.data().get(ValueLayout.JAVA_BYTE, 0) & 0xFF).isEqualTo(0xF2);
            assertThat(x.data().get(ValueLayout.JAVA_BYTE, 1) & 0xFF).isEqualTo(0x01);
        }
        try (Tensor x = Tensor.zeros(DataType.FLOAT6_E2M3FN, 4)) {
            for (int i = 0; i < 4; i++) {
                x.setDouble(new double[] {1, -1, 7.5, 0.125}[i], i);
            }
            assertThat(x.data().byteSize()).isEqualTo(3);
            assertThat(x.toDoubleArray()).containsExactly(1, -1, 7.5, 0.125);
        }
    }

    @Test
    void halfAndBrainFloatsRoundToNearestEven() {
        try (Tensor h = Tensor.zeros(DataType.FLOAT16, 2); Tensor b = Tensor.zeros(DataType.BFLOAT16, 2)) {
            h.setDouble(1 + 0x1p-11, 0);      // a tie between 1 and 1 + 2^-10: to even, 1
            h.setDouble(65520, 1);            // rounds to infinity in binary16
            b.setDouble(1 + 0x1p-8, 0);       // a tie between 1 and 1 + 2^-7
            b.setDouble(1 + 0x1p-8 + 0x1p-20, 1);
            assertThat(h.toDoubleArray()).containsExactly(1.0, Double.POSITIVE_INFINITY);
            assertThat(b.toDoubleArray()).containsExactly(1.0, 1 + 0x1p-7);
        }
    }

    @Test
    void complexElementsAreRealImaginaryPairs() {
        try (Tensor c = Tensor.zeros(DataType.COMPLEX64, 2)) {
            c.setComplex(1.5, -2.5, 0);
            c.setDouble(3, 1);
            assertThat(c.toComplexArray()).containsExactly(1.5, -2.5, 3, 0);
            assertThat(c.getImag(0)).isEqualTo(-2.5);
            assertThat(c.getDouble(0)).isEqualTo(1.5);
            assertThat(c.data().get(ValueLayout.JAVA_FLOAT, 4)).isEqualTo(-2.5f);
        }
    }

    @Test
    void integersConvertLikeCCasts() {
        try (Tensor u8 = Tensor.zeros(DataType.UINT8, 1); Tensor u64 = Tensor.zeros(DataType.UINT64, 1);
             Tensor i4 = Tensor.zeros(new DataType(DataTypeCode.INT, 4, 1), 2)) {
            u8.setLong(300, 0);
            assertThat(u8.getLong(0)).isEqualTo(44);
            u64.setLong(-1, 0);
            assertThat(u64.getLong(0)).isEqualTo(-1);
            assertThat(u64.getDouble(0)).isEqualTo(0x1p64);
            i4.setLong(-8, 0);
            i4.setLong(7, 1);
            assertThat(i4.toLongArray()).containsExactly(-8, 7);
        }
    }

    @Test
    void javaArraysOfEveryPrimitiveTypeBecomeTensors() {
        try (Tensor d = Tensor.of(new double[] {1, 2, 3, 4, 5, 6}, 2, 3);
             Tensor f = Tensor.of(new float[] {1.5f, 2.5f});
             Tensor l = Tensor.of(new long[] {Long.MAX_VALUE, -1});
             Tensor i = Tensor.of(new int[] {7, 8});
             Tensor s = Tensor.of(new short[] {-3});
             Tensor b = Tensor.of(new byte[] {-128, 127});
             Tensor z = Tensor.of(new boolean[] {true, false, true})) {
            assertThat(d.shape()).containsExactly(2, 3);
            assertThat(d.getDouble(1, 2)).isEqualTo(6);
            assertThat(f.dtype()).isEqualTo(DataType.FLOAT32);
            assertThat(f.toFloatArray()).containsExactly(1.5f, 2.5f);
            assertThat(l.toLongArray()).containsExactly(Long.MAX_VALUE, -1);
            assertThat(i.toIntArray()).containsExactly(7, 8);
            assertThat(s.getLong(0)).isEqualTo(-3);
            assertThat(b.toLongArray()).containsExactly(-128, 127);
            assertThat(z.dtype()).isEqualTo(DataType.BOOL);
            assertThat(z.toBooleanArray()).containsExactly(true, false, true);
        }
        assertThatThrownBy(() -> Tensor.of(new double[] {1, 2, 3}, 2, 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("holds 4 elements but the array has 3");
    }

    @Test
    void slicesWithStepsSelectTheSameElementsAsPython() {
        try (Tensor x = Tensor.of(new long[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})) {
            assertThat(x.slice(0, 1, 8, 3).toLongArray()).containsExactly(1, 4, 7);
            assertThat(x.slice(0, -1, Long.MIN_VALUE, -1).toLongArray()).containsExactly(9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
            assertThat(x.slice(0, -3, Long.MAX_VALUE, 1).toLongArray()).containsExactly(7, 8, 9);
            assertThat(x.slice(0, 8, 2, -2).toLongArray()).containsExactly(8, 6, 4);
            assertThat(x.slice(0, 5, 5, 1).numel()).isZero();
            assertThat(x.slice(0, -1, Long.MIN_VALUE, -1).strides()).containsExactly(-1);
        }
    }

    @Test
    void transposesPermutesAndFlipsAreViewsOfTheSameMemory() {
        try (Tensor x = Tensor.of(new int[] {0, 1, 2, 3, 4, 5}, 2, 3)) {
            Tensor t = x.transpose();
            assertThat(t.shape()).containsExactly(3, 2);
            assertThat(t.strides()).containsExactly(1, 3);
            assertThat(t.toIntArray()).containsExactly(0, 3, 1, 4, 2, 5);
            assertThat(t.isContiguous()).isFalse();
            t.setLong(42, 2, 1);
            assertThat(x.getLong(1, 2)).isEqualTo(42);
            assertThat(x.flip(1).toIntArray()).containsExactly(2, 1, 0, 42, 4, 3);
            assertThat(x.permute(1, 0).toIntArray()).isEqualTo(t.toIntArray());
            assertThat(x.select(0, -1).toIntArray()).containsExactly(3, 4, 42);
            assertThatThrownBy(() -> x.permute(0, 0)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void reshapeWorksWhereStridesAllowAndSaysWhatToDoOtherwise() {
        try (Tensor x = Tensor.of(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 3, 4)) {
            assertThat(x.reshape(2, -1).shape()).containsExactly(2, 6);
            assertThat(x.reshape(4, 3).getLong(3, 2)).isEqualTo(11);
            Tensor cols = x.slice(1, 0, 4, 2); // shape [3, 2], strides [4, 2]
            assertThat(cols.reshape(6).toIntArray()).isEqualTo(cols.toIntArray()).containsExactly(0, 2, 4, 6, 8, 10);
            Tensor t = x.transpose();
            assertThatThrownBy(() -> t.reshape(12)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("copy()");
            try (Tensor c = t.copy()) {
                assertThat(c.reshape(12).toIntArray()).containsExactly(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11);
            }
            assertThatThrownBy(() -> x.reshape(5, -1)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void zeroStridesBroadcastAndRefuseWrites() {
        try (Tensor x = Tensor.of(new float[] {1, 2, 3})) {
            Tensor b = x.broadcastTo(2, 3);
            assertThat(b.strides()).containsExactly(0, 1);
            assertThat(b.toFloatArray()).containsExactly(1, 2, 3, 1, 2, 3);
            assertThatThrownBy(() -> b.setDouble(0, 0, 0)).isInstanceOf(UnsupportedOperationException.class);
        }
    }

    @Test
    void borrowedMemoryTakesAnyStridesInsideTheSegment() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocateFrom(ValueLayout.JAVA_DOUBLE, 0, 1, 2, 3, 4, 5);
            Tensor rev = Tensor.wrap(seg, 40, DataType.FLOAT64, new long[] {2, 3}, new long[] {-3, -1});
            assertThat(rev.toDoubleArray()).containsExactly(5, 4, 3, 2, 1, 0);
            assertThat(rev.data().byteSize()).isEqualTo(48);
            Tensor zero = Tensor.wrap(seg, 8, DataType.FLOAT64, new long[] {4}, new long[] {0});
            assertThat(zero.toDoubleArray()).containsExactly(1, 1, 1, 1);
            assertThatThrownBy(() -> Tensor.wrap(seg, 8, DataType.FLOAT64, new long[] {6}, new long[] {1}))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outside");
        }
    }

    @Test
    void readOnlyViewsRefuseEveryWrite() {
        try (Tensor x = Tensor.of(new double[] {1, 2})) {
            Tensor r = x.readOnly();
            assertThat(r.isReadOnly()).isTrue();
            assertThatThrownBy(() -> r.setDouble(0, 0)).isInstanceOf(UnsupportedOperationException.class);
            assertThatThrownBy(() -> r.setLong(0, 0)).isInstanceOf(UnsupportedOperationException.class);
            assertThatThrownBy(() -> r.data().set(ValueLayout.JAVA_DOUBLE, 0, 1.0)).isInstanceOf(IllegalArgumentException.class);
            assertThat(r.asBuffer(java.nio.DoubleBuffer.class).isReadOnly()).isTrue();
            assertThat(r.slice(0, 0, 1, 1).isReadOnly()).isTrue();
        }
    }

    @Test
    void typedAccessIsZeroCopyAndRefusesAMismatchNamingBoth() {
        try (Tensor x = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
            FloatBuffer fb = x.asBuffer(FloatBuffer.class);
            fb.put(4, 50f);
            assertThat(x.getDouble(1, 1)).isEqualTo(50);
            assertThat(x.asSegment(float.class).getAtIndex(ValueLayout.JAVA_FLOAT, 5)).isEqualTo(6f);
            assertThat(x.asBuffer(ByteBuffer.class).capacity()).isEqualTo(24);
            assertThatThrownBy(() -> x.asBuffer(IntBuffer.class)).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("float32").hasMessageContaining("int32");
            assertThatThrownBy(() -> x.transpose().asSegment(float.class)).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("not contiguous").hasMessageContaining("[1, 3]");
        }
    }

    @Test
    void typedBuffersFailCleanlyAfterTheMemoryIsReleased() {
        Tensor x = Tensor.of(new float[] {1, 2, 3});
        FloatBuffer fb = x.asBuffer(FloatBuffer.class);
        x.close();
        assertThatThrownBy(() -> fb.get(0)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void toStringShowsDtypeShapeAndANumpyStylePreview() {
        try (Tensor x = Tensor.of(new float[] {1, 2.5f, 3, 4, 5, 6}, 2, 3);
             Tensor big = Tensor.zeros(DataType.INT32, 2000);
             Tensor b = Tensor.of(new boolean[] {true, false})) {
            assertThat(x.toString()).isEqualTo("Tensor(shape=[2, 3], dtype=float32, device=cpu:0)\n[[1. , 2.5, 3. ],\n [4. , 5. , 6. ]]");
            assertThat(big.toString()).endsWith("[0, 0, 0, ..., 0, 0, 0]");
            assertThat(b.toString()).endsWith("[ True, False]");
        }
        Tensor closed = Tensor.zeros(DataType.INT8, 1);
        closed.close();
        assertThat(closed.toString()).contains("closed");
    }

    @Test
    void aClosedTensorAndItsViewsThrowInsteadOfCrashing() {
        Tensor x = Tensor.of(new double[] {1, 2, 3});
        Tensor view = x.slice(0, 1, 3, 1);
        MemorySegment data = x.data();
        x.close();
        x.close();
        assertThat(x.isClosed()).isTrue();
        assertThatThrownBy(() -> x.getDouble(0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> view.toDoubleArray()).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> data.get(ValueLayout.JAVA_DOUBLE, 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(x::data).isInstanceOf(IllegalStateException.class);
        view.close(); // closing a view does nothing, and certainly does not throw
    }

    @Test
    void bulkReadsOfContiguousDataCopyWithoutPerElementWork() {
        float[] values = new float[1 << 16];
        for (int i = 0; i < values.length; i++) {
            values[i] = i;
        }
        try (Tensor x = Tensor.of(values)) {
            assertThat(x.toFloatArray()).isEqualTo(values);
            assertThat(x.copy().toFloatArray()).isEqualTo(values);
        }
    }

    @Test
    void scalarsHaveNoDimensionsAndOneElement() {
        try (Tensor s = Tensor.zeros(DataType.FLOAT64)) {
            s.setDouble(3.5);
            assertThat(s.ndim()).isZero();
            assertThat(s.numel()).isOne();
            assertThat(s.getDouble()).isEqualTo(3.5);
            assertThat(s.toString()).endsWith("\n3.5");
        }
    }

    @Test
    void indicesOutOfBoundsAreRefused() {
        try (Tensor x = Tensor.zeros(DataType.INT8, 2, 2)) {
            assertThatThrownBy(() -> x.getLong(2, 0)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> x.getLong(0)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void heapSegmentsAndOverflowingOffsetsCannotBeWrapped() {
        assertThatThrownBy(() -> Tensor.wrap(MemorySegment.ofArray(new float[8]), DataType.FLOAT32, 8))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("native");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(64);
            assertThatThrownBy(() -> Tensor.wrap(seg, Long.MAX_VALUE - 10, DataType.FLOAT32, new long[] {4}, new long[] {1}))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outside");
        }
    }

    @Test
    void packedViewsStartOnWholeBytesOrAreRefused() {
        try (Tensor x = Tensor.zeros(DataType.FLOAT4_E2M1FN, 6)) {
            for (int i = 0; i < 6; i++) {
                x.setDouble(new double[] {0, 0.5, 1, 1.5, 2, 3}[i], i);
            }
            assertThat(x.slice(0, 2, 6, 1).toDoubleArray()).containsExactly(1, 1.5, 2, 3);
            assertThatThrownBy(() -> x.slice(0, 1, 3, 1)).isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("copy()");
            assertThatThrownBy(() -> x.reshape(2, 3).select(0, 1)).isInstanceOf(UnsupportedOperationException.class);
        }
        try (Tensor y = Tensor.zeros(DataType.FLOAT4_E2M1FN, 2, 4)) {
            y.setDouble(6, 1, 3);
            assertThat(y.select(0, 1).toDoubleArray()).containsExactly(0, 0, 0, 6);
        }
    }

    @Test
    void emptyViewsStayInsideTheirMemory() {
        try (Tensor x = Tensor.zeros(DataType.INT64, 5, 0, 2)) {
            Tensor f = x.flip(0);
            assertThat(f.toLongArray()).isEmpty();
            try (Tensor c = f.copy()) {
                assertThat(c.shape()).containsExactly(5, 0, 2);
            }
            assertThat(x.slice(0, 4, 5, 1).transpose().toLongArray()).isEmpty();
        }
    }

    @Test
    void narrowingFromDoubleRoundsOnceToTheNearestValue() {
        try (Tensor h = Tensor.zeros(DataType.FLOAT16); Tensor e = Tensor.zeros(DataType.FLOAT8_E4M3FN);
             Tensor b = Tensor.zeros(DataType.BFLOAT16)) {
            h.setDouble(1 + 0x1p-11 + 0x1p-40);
            e.setDouble(1 + 0x1p-4 + 0x1p-30);
            b.setDouble(1 + 0x1p-8 + 0x1p-40);
            assertThat(h.data().get(ValueLayout.JAVA_SHORT, 0)).isEqualTo((short) 0x3c01);
            assertThat(e.getDouble()).isEqualTo(1.125);
            assertThat(b.getDouble()).isEqualTo(1.0078125);
        }
    }

    @Test
    void everyPrimitiveArrayTypeGoesInAndComesOut() {
        try (Tensor c = Tensor.of(new char[] {'a', 65535}); Tensor s = Tensor.of(new short[] {-2, 300});
             Tensor b = Tensor.of(new byte[] {-1, 7})) {
            assertThat(c.dtype()).isEqualTo(DataType.UINT16);
            assertThat(c.toCharArray()).containsExactly('a', (char) 65535);
            assertThat(c.toLongArray()).containsExactly(97, 65535);
            assertThat(s.toShortArray()).containsExactly((short) -2, (short) 300);
            assertThat(s.transpose().toByteArray()).containsExactly((byte) -2, (byte) 44);
            assertThat(b.toByteArray()).containsExactly((byte) -1, (byte) 7);
        }
    }
}
