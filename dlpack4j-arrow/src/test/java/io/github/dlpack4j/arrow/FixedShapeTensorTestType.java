package io.github.dlpack4j.arrow;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ExtensionTypeVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * {@code arrow.fixed_shape_tensor} as an application would register it with Arrow Java (which has
 * no class of its own for it): an {@code ExtensionType} over a FixedSizeList of float32.
 */
final class FixedShapeTensorTestType extends ArrowType.ExtensionType {
    private final int listSize;
    private final String metadata;

    FixedShapeTensorTestType(int listSize, String metadata) {
        this.listSize = listSize;
        this.metadata = metadata;
    }

    /** A column of {@code rows} tensors; value {@code i} of the flat values is {@code i}. */
    static Vector vector(BufferAllocator allocator, String metadata, int rows, int listSize) {
        FixedShapeTensorTestType type = new FixedShapeTensorTestType(listSize, metadata);
        Vector v = (Vector) type.getNewVector("registered", FieldType.nullable(type), allocator);
        FixedSizeListVector storage = v.getUnderlyingVector();
        storage.allocateNew();
        Float4Vector values = (Float4Vector) storage.getDataVector();
        for (int i = 0; i < rows * listSize; i++) {
            values.setSafe(i, i);
        }
        for (int r = 0; r < rows; r++) {
            storage.setNotNull(r);
        }
        v.setValueCount(rows);
        return v;
    }

    @Override
    public ArrowType storageType() {
        return new ArrowType.FixedSizeList(listSize);
    }

    @Override
    public String extensionName() {
        return "arrow.fixed_shape_tensor";
    }

    @Override
    public boolean extensionEquals(ArrowType.ExtensionType other) {
        return other instanceof FixedShapeTensorTestType o && o.listSize == listSize && o.metadata.equals(metadata);
    }

    @Override
    public String serialize() {
        return metadata;
    }

    @Override
    public ArrowType deserialize(ArrowType storageType, String serializedData) {
        return new FixedShapeTensorTestType(((ArrowType.FixedSizeList) storageType).getListSize(), serializedData);
    }

    // java.util.List is spelled out below: the inherited ArrowType.List hides it in this class.
    @Override
    public FieldVector getNewVector(String name, FieldType fieldType, BufferAllocator allocator) {
        Field storage = new Field(name, FieldType.nullable(storageType()),
                java.util.List.of(new Field("item", FieldType.nullable(Vectors.FLOAT32), null)));
        return new Vector(name, allocator, (FixedSizeListVector) storage.createVector(allocator), this);
    }

    /** The column's vector: the FixedSizeList storage under the extension type. */
    static final class Vector extends ExtensionTypeVector<FixedSizeListVector> {
        private final FixedShapeTensorTestType type;

        Vector(String name, BufferAllocator allocator, FixedSizeListVector storage, FixedShapeTensorTestType type) {
            super(name, allocator, storage);
            this.type = type;
        }

        @Override
        public Object getObject(int index) {
            return getUnderlyingVector().getObject(index);
        }

        @Override
        public int hashCode(int index) {
            return getUnderlyingVector().hashCode(index);
        }

        @Override
        public int hashCode(int index, org.apache.arrow.memory.util.hash.ArrowBufHasher hasher) {
            return getUnderlyingVector().hashCode(index, hasher);
        }

        @Override
        public Field getField() {
            return new Field(getName(), FieldType.nullable(type), getUnderlyingVector().getField().getChildren());
        }
    }
}
