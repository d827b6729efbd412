package io.github.dlpack4j.arrow;

import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/** Arrow vectors for the tests, made the way Arrow users make them. */
final class Vectors {
    static final ArrowType FLOAT32 = new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);

    private Vectors() {}

    /** A Float4Vector holding {@code values}. */
    static Float4Vector floats(BufferAllocator allocator, float... values) {
        Float4Vector v = new Float4Vector("floats", allocator);
        v.allocateNew(values.length);
        for (int i = 0; i < values.length; i++) {
            v.set(i, values[i]);
        }
        v.setValueCount(values.length);
        return v;
    }

    /** A {@code FixedSizeList<float32>[d]} column of {@code rows} rows; value {@code [r][j]} is {@code r * d + j}. */
    static FixedSizeListVector embeddings(BufferAllocator allocator, int rows, int d) {
        return fixedSizeList(allocator, "embeddings", Map.of(), rows, d);
    }

    /**
     * A {@code FixedSizeList<float32>[listSize]} with {@code metadata} on its field; value {@code i}
     * of the flat values is {@code i}.
     */
    static FixedSizeListVector fixedSizeList(BufferAllocator allocator, String name, Map<String, String> metadata,
                                             int rows, int listSize) {
        Field field = new Field(name, new FieldType(true, new ArrowType.FixedSizeList(listSize), null, metadata),
                List.of(new Field("item", FieldType.nullable(FLOAT32), null)));
        FixedSizeListVector v = (FixedSizeListVector) field.createVector(allocator);
        v.allocateNew();
        Float4Vector values = (Float4Vector) v.getDataVector();
        for (int i = 0; i < rows * listSize; i++) {
            values.setSafe(i, i);
        }
        for (int r = 0; r < rows; r++) {
            v.setNotNull(r);
        }
        v.setValueCount(rows);
        return v;
    }

    /** A {@code arrow.fixed_shape_tensor} column as Arrow Java reads one it has no class for. */
    static FixedSizeListVector fixedShapeTensor(BufferAllocator allocator, String metadata, int rows, int listSize) {
        return fixedSizeList(allocator, "tensors", Map.of(
                ArrowType.ExtensionType.EXTENSION_METADATA_KEY_NAME, "arrow.fixed_shape_tensor",
                ArrowType.ExtensionType.EXTENSION_METADATA_KEY_METADATA, metadata), rows, listSize);
    }

    /** The address of a vector's values. */
    static long address(FieldVector v) {
        return v.getDataBuffer().memoryAddress();
    }
}
