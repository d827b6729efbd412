package io.github.dlpack4j.arrow;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Tensors as Arrow vectors over the tensor's own memory, and back. */
@ExtendWith(ArrowNoLeaks.class)
class TensorToArrowTest {
    static Stream<Arguments> primitiveVectors() {
        return ArrowToTensorTest.primitiveVectors();
    }

    @ParameterizedTest(name = "{2} -> {1}")
    @MethodSource("primitiveVectors")
    void everyDtypeBecomesItsPrimitiveVectorOverTheTensorsMemory(ArrowType type, Class<?> vectorClass, DataType dtype,
                                                                 BufferAllocator allocator) {
        try (Tensor t = Tensor.zeros(dtype, 5)) {
            for (int i = 0; i < 5; i++) {
                t.setLong(i * 10 - 3, i);
            }
            try (FieldVector v = ArrowTensors.toVector(t, allocator, "column")) {
                assertThat(v).isInstanceOf(vectorClass);
                assertThat(v.getField().getType()).isEqualTo(type);
                assertThat(v.getName()).isEqualTo("column");
                assertThat(v.getValueCount()).isEqualTo(5);
                assertThat(v.getNullCount()).isZero();
                assertThat(v.getField().isNullable()).as("a tensor has no nulls").isFalse();
                assertThat(Vectors.address(v)).isEqualTo(t.dataPointer());
                BaseFixedWidthVector values = (BaseFixedWidthVector) v;
                for (int i = 0; i < 5; i++) {
                    assertThat(ArrowToTensorTest.get(values, i)).as("value %d", i)
                            .isEqualTo(dtype.code() == io.github.dlpack4j.DataTypeCode.FLOAT ? t.getDouble(i) : t.getLong(i));
                }
                ArrowToTensorTest.set(values, 4, 12);
                assertThat(t.getLong(4)).as("a write through the vector").isEqualTo(12);
                t.setLong(5, 0);
                assertThat(ArrowToTensorTest.get(values, 0)).as("a write through the tensor").isEqualTo(5);
                try (Tensor back = ArrowTensors.of(v)) {
                    assertThat(back.dtype()).isEqualTo(dtype);
                    assertThat(back.dataPointer()).isEqualTo(t.dataPointer());
                }
            }
        }
    }

    @Test
    void aMatrixBecomesAFixedSizeListColumnOfItsRows(BufferAllocator allocator) {
        try (Tensor t = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
             FixedSizeListVector v = (FixedSizeListVector) ArrowTensors.toVector(t, allocator)) {
            assertThat(v.getListSize()).isEqualTo(3);
            assertThat(v.getValueCount()).isEqualTo(2);
            assertThat(v.getObject(1)).isEqualTo(java.util.List.of(4f, 5f, 6f));
            assertThat(Vectors.address(v.getDataVector())).isEqualTo(t.dataPointer());
            assertThat(v.getField().getMetadata()).isEmpty();
        }
    }

    @Test
    void moreDimensionsBecomeAFixedShapeTensorColumnThatComesBackAsTheSameTensor(BufferAllocator allocator) {
        try (Tensor t = Tensor.of(new double[24], 2, 3, 4); FieldVector v = ArrowTensors.toVector(t, allocator);
             Tensor back = ArrowTensors.of(v)) {
            assertThat(v.getField().getMetadata()).containsExactlyInAnyOrderEntriesOf(Map.of(
                    "ARROW:extension:name", "arrow.fixed_shape_tensor", "ARROW:extension:metadata", "{\"shape\":[3,4]}"));
            assertThat(((FixedSizeListVector) v).getListSize()).isEqualTo(12);
            assertThat(back.shape()).containsExactly(2, 3, 4);
            assertThat(back.strides()).containsExactly(12, 4, 1);
            assertThat(back.dataPointer()).isEqualTo(t.dataPointer());
        }
    }

    @Test
    void aPermutedViewOfCompactRowsKeepsItsOrderAsTheFixedShapeTensorsPermutation(BufferAllocator allocator) {
        // NCHW memory seen as NHWC: the physical shape stays [C, H, W], the permutation names the view's order.
        try (Tensor nchw = Tensor.zeros(DataType.FLOAT32, 2, 3, 4, 5)) {
            Tensor nhwc = nchw.permute(0, 2, 3, 1);
            nhwc.setDouble(7, 1, 2, 3, 1);
            try (FieldVector v = ArrowTensors.toVector(nhwc, allocator); Tensor back = ArrowTensors.of(v)) {
                assertThat(v.getField().getMetadata()).containsEntry("ARROW:extension:metadata",
                        "{\"shape\":[3,4,5],\"permutation\":[1,2,0]}");
                assertThat(back.shape()).containsExactly(nhwc.shape());
                assertThat(back.strides()).containsExactly(nhwc.strides());
                assertThat(back.dataPointer()).isEqualTo(nchw.dataPointer());
                assertThat(back.getDouble(1, 2, 3, 1)).isEqualTo(7);
            }
        }
    }

    @Test
    void emptyTensorsBecomeEmptyVectors(BufferAllocator allocator) {
        try (Tensor none = Tensor.zeros(DataType.FLOAT32, 0); Tensor noRows = Tensor.zeros(DataType.INT64, 0, 384);
             Tensor emptyRows = Tensor.zeros(DataType.INT8, 3, 0, 2);
             FieldVector a = ArrowTensors.toVector(none, allocator); FieldVector b = ArrowTensors.toVector(noRows, allocator);
             FieldVector c = ArrowTensors.toVector(emptyRows, allocator)) {
            assertThat(a).isInstanceOf(Float4Vector.class);
            assertThat(a.getValueCount()).isZero();
            assertThat(((FixedSizeListVector) b).getListSize()).isEqualTo(384);
            assertThat(b.getValueCount()).isZero();
            assertThat(c.getValueCount()).isEqualTo(3);
            try (Tensor back = ArrowTensors.of(c)) {
                assertThat(back.shape()).containsExactly(3, 0, 2);
            }
        }
    }

    @Test
    void theAllocatorCountsTheTensorsBytesWhileTheVectorLives(BufferAllocator allocator) {
        try (Tensor t = Tensor.zeros(DataType.FLOAT64, 1000)) {
            FieldVector v = ArrowTensors.toVector(t, allocator);
            assertThat(allocator.getAllocatedMemory()).isGreaterThanOrEqualTo(8000);
            v.close();
            assertThat(allocator.getAllocatedMemory()).isZero();
        }
    }
}
