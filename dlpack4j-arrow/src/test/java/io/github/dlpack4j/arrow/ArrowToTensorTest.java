package io.github.dlpack4j.arrow;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseIntVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float2Vector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.FloatingPointVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.UInt1Vector;
import org.apache.arrow.vector.UInt2Vector;
import org.apache.arrow.vector.UInt4Vector;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Arrow vectors as tensors: types, shapes, slices, over the vector's own memory. */
@ExtendWith(ArrowNoLeaks.class)
class ArrowToTensorTest {
    static Stream<Arguments> primitiveVectors() {
        return Stream.of(
                arguments(new ArrowType.Int(8, true), TinyIntVector.class, DataType.INT8),
                arguments(new ArrowType.Int(16, true), SmallIntVector.class, DataType.INT16),
                arguments(new ArrowType.Int(32, true), IntVector.class, DataType.INT32),
                arguments(new ArrowType.Int(64, true), BigIntVector.class, DataType.INT64),
                arguments(new ArrowType.Int(8, false), UInt1Vector.class, DataType.UINT8),
                arguments(new ArrowType.Int(16, false), UInt2Vector.class, DataType.UINT16),
                arguments(new ArrowType.Int(32, false), UInt4Vector.class, DataType.UINT32),
                arguments(new ArrowType.Int(64, false), UInt8Vector.class, DataType.UINT64),
                arguments(new ArrowType.FloatingPoint(FloatingPointPrecision.HALF), Float2Vector.class, DataType.FLOAT16),
                arguments(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE), Float4Vector.class, DataType.FLOAT32),
                arguments(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE), Float8Vector.class, DataType.FLOAT64));
    }

    /** A vector of {@code type} holding 0, 1, 2, 100, -3 (253 and so on when unsigned). */
    static BaseFixedWidthVector primitive(BufferAllocator allocator, ArrowType type) {
        BaseFixedWidthVector v = (BaseFixedWidthVector) new Field("v", FieldType.nullable(type), null).createVector(allocator);
        long[] values = {0, 1, 2, 100, -3};
        v.allocateNew(values.length);
        for (int i = 0; i < values.length; i++) {
            set(v, i, values[i]);
        }
        v.setValueCount(values.length);
        return v;
    }

    static void set(BaseFixedWidthVector v, int i, long value) {
        if (v instanceof BaseIntVector ints) {
            ints.setWithPossibleTruncate(i, value);
        } else if (v instanceof Float2Vector halves) {
            halves.setWithPossibleTruncate(i, (float) value);
        } else {
            ((FloatingPointVector) v).setWithPossibleTruncate(i, (double) value);
        }
    }

    static double get(BaseFixedWidthVector v, int i) {
        return v instanceof BaseIntVector ints ? ints.getValueAsLong(i) : ((FloatingPointVector) v).getValueAsDouble(i);
    }

    @ParameterizedTest(name = "{1} -> {2}")
    @MethodSource("primitiveVectors")
    void everyPrimitiveVectorIsATensorOfItsDtypeOverTheVectorsMemory(ArrowType type, Class<?> vectorClass, DataType dtype,
                                                                     BufferAllocator allocator) {
        try (BaseFixedWidthVector v = primitive(allocator, type); Tensor t = ArrowTensors.of(v)) {
            assertThat(v).isInstanceOf(vectorClass);
            assertThat(t.dtype()).isEqualTo(dtype);
            assertThat(t.shape()).containsExactly(5);
            assertThat(t.strides()).containsExactly(1);
            assertThat(t.dataPointer()).isEqualTo(Vectors.address(v));
            for (int i = 0; i < 5; i++) {
                double expected = get(v, i);
                assertThat(dtype.code() == io.github.dlpack4j.DataTypeCode.FLOAT ? t.getDouble(i) : (double) t.getLong(i))
                        .as("value %d", i).isEqualTo(expected);
            }
            t.setLong(7, 2);
            assertThat(get(v, 2)).as("a write through the tensor").isEqualTo(7);
            set(v, 3, 9);
            assertThat(t.getDouble(3)).as("a write through the vector").isEqualTo(9);
        }
    }

    @Test
    void aFixedSizeListColumnIsARowsByListSizeTensor(BufferAllocator allocator) {
        try (FixedSizeListVector v = Vectors.embeddings(allocator, 4, 3); Tensor t = ArrowTensors.of(v)) {
            assertThat(t.dtype()).isEqualTo(DataType.FLOAT32);
            assertThat(t.shape()).containsExactly(4, 3);
            assertThat(t.strides()).containsExactly(3, 1);
            assertThat(t.dataPointer()).isEqualTo(Vectors.address(v.getDataVector()));
            assertThat(t.getDouble(2, 1)).isEqualTo(7);
            t.setDouble(-1, 3, 2);
            assertThat(((Float4Vector) v.getDataVector()).get(11)).isEqualTo(-1);
        }
    }

    @Test
    void nestedFixedSizeListsAreOneDimensionEach(BufferAllocator allocator) {
        Field inner = new Field("inner", FieldType.nullable(new ArrowType.FixedSizeList(3)),
                List.of(new Field("item", FieldType.nullable(Vectors.FLOAT32), null)));
        Field outer = new Field("outer", FieldType.nullable(new ArrowType.FixedSizeList(2)), List.of(inner));
        try (FixedSizeListVector v = (FixedSizeListVector) outer.createVector(allocator)) {
            v.allocateNew();
            FixedSizeListVector rows = (FixedSizeListVector) v.getDataVector();
            Float4Vector values = (Float4Vector) rows.getDataVector();
            for (int i = 0; i < 12; i++) {
                values.setSafe(i, i);
            }
            for (int i = 0; i < 4; i++) {
                rows.setNotNull(i);
            }
            v.setNotNull(0);
            v.setNotNull(1);
            v.setValueCount(2);
            try (Tensor t = ArrowTensors.of(v)) {
                assertThat(t.shape()).containsExactly(2, 2, 3);
                assertThat(t.toFloatArray()).containsExactly(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
                assertThat(t.dataPointer()).isEqualTo(Vectors.address(values));
            }
        }
    }

    @Test
    void aFixedShapeTensorColumnHasItsShapeAfterTheRows(BufferAllocator allocator) {
        try (FixedSizeListVector v = Vectors.fixedShapeTensor(allocator, "{\"shape\": [2, 3], \"dim_names\": [\"H\", \"W\"]}", 2, 6);
             Tensor t = ArrowTensors.of(v)) {
            assertThat(t.shape()).containsExactly(2, 2, 3);
            assertThat(t.strides()).containsExactly(6, 3, 1);
            assertThat(t.getDouble(1, 1, 2)).isEqualTo(11);
            assertThat(ArrowTensors.dimNames(v)).containsExactly("H", "W");
        }
    }

    @Test
    void aFixedShapeTensorsPermutationBecomesStridesAndOrdersItsDimNames(BufferAllocator allocator) {
        // Physical [2, 3, 4] row-major (strides 12, 4, 1); logical dim i is physical dim permutation[i].
        String metadata = "{\"shape\":[2,3,4],\"dim_names\":[\"C\",\"H\",\"W\"],\"permutation\":[2,0,1]}";
        try (FixedSizeListVector v = Vectors.fixedShapeTensor(allocator, metadata, 2, 24); Tensor t = ArrowTensors.of(v)) {
            assertThat(t.shape()).containsExactly(2, 4, 2, 3);
            assertThat(t.strides()).containsExactly(24, 1, 12, 4);
            assertThat(ArrowTensors.dimNames(v)).containsExactly("W", "C", "H");
            // logical [1][w=3][c=1][h=2] is physical [c=1][h=2][w=3] of row 1
            assertThat(t.getDouble(1, 3, 1, 2)).isEqualTo(24 + 12 + 8 + 3);
        }
    }

    @Test
    void aRegisteredFixedShapeTensorTypeIsReadFromItsExtensionVector(BufferAllocator allocator) {
        try (FixedShapeTensorTestType.Vector v = FixedShapeTensorTestType.vector(allocator, "{\"shape\":[3,2],"
                + "\"permutation\":[1,0],\"dim_names\":[\"a\",\"b\"]}", 2, 6);
             Tensor t = ArrowTensors.of(v)) {
            assertThat(t.shape()).containsExactly(2, 2, 3);
            assertThat(t.strides()).containsExactly(6, 1, 2);
            assertThat(ArrowTensors.dimNames(v)).containsExactly("b", "a");
            assertThat(t.dataPointer()).isEqualTo(Vectors.address(v.getUnderlyingVector().getDataVector()));
        }
    }

    @Test
    void aSliceOfRowsViewsTheSameMemoryAtItsOffset(BufferAllocator allocator) {
        try (FixedSizeListVector v = Vectors.embeddings(allocator, 10, 4); Tensor t = ArrowTensors.of(v, 3, 2)) {
            assertThat(t.shape()).containsExactly(2, 4);
            assertThat(t.dataPointer()).isEqualTo(Vectors.address(v.getDataVector()) + 3 * 4 * 4);
            assertThat(t.toFloatArray()).containsExactly(12, 13, 14, 15, 16, 17, 18, 19);
        }
        try (Float4Vector v = Vectors.floats(allocator, 1, 2, 3); Tensor t = ArrowTensors.of(v, 3, 0)) {
            assertThat(t.shape()).containsExactly(0);
        }
    }

    @Test
    void rowsOutsideTheVectorAreRefused(BufferAllocator allocator) {
        try (Float4Vector v = Vectors.floats(allocator, 1, 2, 3)) {
            assertThatThrownBy(() -> ArrowTensors.of(v, 2, 2)).isInstanceOf(IndexOutOfBoundsException.class)
                    .hasMessageContaining("rows [2, 2 + 2) are outside the 3 rows of 'floats'");
            assertThatThrownBy(() -> ArrowTensors.of(v, -1, 1)).isInstanceOf(IndexOutOfBoundsException.class);
        }
    }

    @Test
    void emptyVectorsAreTensorsWithZeroRows(BufferAllocator allocator) {
        try (Float8Vector never = new Float8Vector("never", allocator); Tensor t = ArrowTensors.of(never)) {
            assertThat(t.shape()).containsExactly(0);
            assertThat(t.dtype()).isEqualTo(DataType.FLOAT64);
            assertThat(t.toDoubleArray()).isEmpty();
        }
        try (FixedSizeListVector v = Vectors.embeddings(allocator, 0, 384); Tensor t = ArrowTensors.of(v)) {
            assertThat(t.shape()).containsExactly(0, 384);
        }
        try (FixedSizeListVector v = Vectors.embeddings(allocator, 3, 0); Tensor t = ArrowTensors.of(v)) {
            assertThat(t.shape()).containsExactly(3, 0);
            assertThat(t.numel()).isZero();
        }
    }

    @Test
    void aTensorKeepsTheBufferTheVectorHadWhenTheVectorGrowsIntoANewOne(BufferAllocator allocator) {
        try (Float4Vector v = Vectors.floats(allocator, 1, 2); Tensor t = ArrowTensors.of(v)) {
            for (int i = 2; i < 10_000; i++) {
                v.setSafe(i, -i);
            }
            assertThat(Vectors.address(v)).isNotEqualTo(t.dataPointer());
            assertThat(t.toFloatArray()).containsExactly(1, 2);
        }
    }

    @Test
    void fixedShapeMetadataThatDoesNotFitTheColumnIsRefused(BufferAllocator allocator) {
        Map<String, String> cases = Map.of(
                "{\"shape\":[2,2]}", "has shape [2, 2], which does not hold the 6 values of its FixedSizeList",
                "{\"shape\":[2,3],\"permutation\":[0,0]}", "permutation[1] = 0 does not make a permutation of 0..1",
                "{\"shape\":[2,3],\"dim_names\":[\"a\"]}", "dim_names must name each of the 2 dimensions",
                "{\"shape\":[2,-3]}", "shape[1] = -3 is not an extent",
                "[2, 3]", "has no \"shape\" array",
                "{shape", "is not JSON");
        cases.forEach((metadata, message) -> {
            try (FixedSizeListVector v = Vectors.fixedShapeTensor(allocator, metadata, 1, 6)) {
                assertThatThrownBy(() -> ArrowTensors.of(v)).as(metadata).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining(message);
            }
        });
    }

    @Test
    void aFixedShapeTensorStoredAsAnythingButOneFixedSizeListIsRefused(BufferAllocator allocator) {
        Map<String, String> metadata = Map.of(ArrowType.ExtensionType.EXTENSION_METADATA_KEY_NAME, FixedShapeTensor.NAME,
                ArrowType.ExtensionType.EXTENSION_METADATA_KEY_METADATA, "{\"shape\":[1]}");
        Field plain = new Field("plain", new FieldType(true, Vectors.FLOAT32, null, metadata), null);
        Field nested = new Field("nested", new FieldType(true, new ArrowType.FixedSizeList(1), null, metadata),
                List.of(new Field("inner", FieldType.nullable(new ArrowType.FixedSizeList(1)),
                        List.of(new Field("item", FieldType.nullable(Vectors.FLOAT32), null)))));
        try (Float4Vector v = (Float4Vector) plain.createVector(allocator);
             FixedSizeListVector n = (FixedSizeListVector) nested.createVector(allocator)) {
            v.allocateNew(1);
            v.set(0, 1f);
            v.setValueCount(1);
            assertThatThrownBy(() -> ArrowTensors.of(v)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("must be stored as one FixedSizeList of values, not 0 nested lists");
            assertThatThrownBy(() -> ArrowTensors.of(n)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("must be stored as one FixedSizeList of values, not 2 nested lists");
        }
    }
}
