package io.github.dlpack4j.djl;

import static org.assertj.core.api.Assertions.assertThat;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class RoundTripTest {
    private NDManager manager;
    private Leaks leaks;

    @BeforeEach
    void open() {
        leaks = Leaks.now();
        manager = NDManager.newBaseManager("PyTorch");
    }

    @AfterEach
    void close() {
        manager.close();
        leaks.assertBack();
    }

    static Stream<Integer> everyType() {
        return IntStream.range(0, DjlTypes.DJL.size()).boxed();
    }

    /** Bytes that are a valid, distinct value of every type (bool: 0 and 1). */
    static byte[] pattern(DataType dtype, int elements) {
        byte[] b = new byte[elements * dtype.byteSize()];
        for (int i = 0; i < b.length; i++) {
            b[i] = dtype.equals(DataType.BOOL) ? (byte) (i % 3 == 0 ? 1 : 0) : (byte) (i * 37 + 11);
        }
        if (dtype.equals(DataType.FLOAT16) || dtype.equals(DataType.BFLOAT16) || dtype.equals(DataType.FLOAT32)
                || dtype.equals(DataType.FLOAT64)) {
            // finite values only, so that no NaN payload can be canonicalised on the way
            for (int i = dtype.byteSize() - 1; i < b.length; i += dtype.byteSize()) {
                b[i] = (byte) (b[i] & 0x3f);
            }
        }
        return b;
    }

    @ParameterizedTest
    @MethodSource("everyType")
    void an_array_of_every_type_becomes_a_tensor_over_the_same_bytes_and_back(int k) {
        ai.djl.ndarray.types.DataType djl = DjlTypes.DJL.get(k);
        DataType dtype = DjlTypes.DLPACK.get(k);
        byte[] values = pattern(dtype, 6);
        ByteBuffer in = ByteBuffer.allocateDirect(values.length).order(ByteOrder.nativeOrder()).put(values).flip();
        try (NDArray a = manager.create(in, new Shape(2, 3), djl)) {
            assertThat(a.getDataType()).isEqualTo(djl);
            long address = MemorySegment.ofBuffer(a.toByteBuffer(true)).address();
            try (Tensor t = DjlTensors.of(a)) {
                assertThat(t.dtype()).isEqualTo(dtype);
                assertThat(t.shape()).containsExactly(2, 3);
                assertThat(t.dataPointer()).as("the tensor's address").isEqualTo(address);
                assertThat(t.data().toArray(ValueLayout.JAVA_BYTE)).isEqualTo(values);
                NDArray back = DjlTensors.toNDArray(t, manager);
                assertThat(back.getDataType()).isEqualTo(djl);
                assertThat(back.getShape()).isEqualTo(new Shape(2, 3));
                assertThat(MemorySegment.ofBuffer(back.toByteBuffer(true)).address()).as("the array's address")
                        .isEqualTo(address);
                assertThat(back.toByteArray()).isEqualTo(values);
                back.close();
            }
        }
    }

    @Test
    void writes_through_either_side_are_seen_by_the_other() {
        try (NDArray a = manager.arange(6f).reshape(2, 3).mul(2); Tensor t = DjlTensors.of(a)) {
            assertThat(DjlTensors.isView(a)).isTrue();
            t.setDouble(100, 0, 1);
            assertThat(a.getFloat(0, 1)).isEqualTo(100f);
            try (NDArray back = DjlTensors.toNDArray(t, manager)) {
                back.set(new ai.djl.ndarray.index.NDIndex("1, 2"), 7f);
                assertThat(t.getDouble(1, 2)).isEqualTo(7.0);
                assertThat(a.getFloat(1, 2)).isEqualTo(7f);
            }
        }
    }

    @Test
    void a_transposed_array_is_copied_in_row_major_order_and_isView_says_so() {
        try (NDArray a = manager.arange(6).reshape(2, 3); NDArray at = a.transpose()) {
            assertThat(DjlTensors.isView(at)).isFalse();
            try (Tensor t = DjlTensors.of(at)) {
                assertThat(t.shape()).containsExactly(3, 2);
                assertThat(t.toLongArray()).containsExactly(0, 3, 1, 4, 2, 5);
                t.setLong(99, 0, 0);
                assertThat(at.getInt(0, 0)).as("a copy").isEqualTo(0);
            }
        }
    }

    @Test
    void scalars_and_empty_arrays_cross_both_ways() {
        try (NDArray s = manager.create(3.5f); Tensor t = DjlTensors.of(s)) {
            assertThat(t.ndim()).isZero();
            assertThat(t.getDouble()).isEqualTo(3.5);
            try (NDArray back = DjlTensors.toNDArray(t, manager)) {
                assertThat(back.getShape()).isEqualTo(new Shape());
                assertThat(back.getFloat()).isEqualTo(3.5f);
            }
        }
        try (NDArray e = manager.zeros(new Shape(0, 4)); Tensor t = DjlTensors.of(e)) {
            assertThat(t.shape()).containsExactly(0, 4);
            try (NDArray back = DjlTensors.toNDArray(t, manager)) {
                assertThat(back.getShape()).isEqualTo(new Shape(0, 4));
            }
        }
    }
}
