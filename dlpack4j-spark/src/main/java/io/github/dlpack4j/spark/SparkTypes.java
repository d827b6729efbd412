package io.github.dlpack4j.spark;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import java.lang.foreign.MemorySegment;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeWriter;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

/**
 * The Spark types a tensor column may hold, each with its dtype and the moves of one value between
 * Spark's rows and a tensor's memory (native byte order on both sides, as Spark's unsafe rows and
 * DLPack keep it).
 */
enum SparkTypes {
    BOOLEAN(DataTypes.BooleanType, io.github.dlpack4j.DataType.BOOL),
    BYTE(DataTypes.ByteType, io.github.dlpack4j.DataType.INT8),
    SHORT(DataTypes.ShortType, io.github.dlpack4j.DataType.INT16),
    INT(DataTypes.IntegerType, io.github.dlpack4j.DataType.INT32),
    LONG(DataTypes.LongType, io.github.dlpack4j.DataType.INT64),
    FLOAT(DataTypes.FloatType, io.github.dlpack4j.DataType.FLOAT32),
    DOUBLE(DataTypes.DoubleType, io.github.dlpack4j.DataType.FLOAT64);

    final DataType spark;
    final io.github.dlpack4j.DataType dtype;
    /** Bytes per value, in the tensor and in Spark's unsafe arrays alike. */
    final int size;

    SparkTypes(DataType spark, io.github.dlpack4j.DataType dtype) {
        this.spark = spark;
        this.dtype = dtype;
        this.size = dtype.byteSize();
    }

    /**
     * The entry for a Spark type.
     *
     * @throws IllegalArgumentException naming {@code column} and the types a tensor column may hold
     */
    static SparkTypes of(DataType type, String column) {
        for (SparkTypes t : values()) {
            if (t.spark.equals(type)) {
                return t;
            }
        }
        throw new IllegalArgumentException("column " + column + ": " + type.simpleString() + " has no tensor dtype; "
                + "a tensor column holds boolean, tinyint, smallint, int, bigint, float or double values, "
                + "or fixed-length arrays of them");
    }

    static io.github.dlpack4j.DataType dtype(DataType type, String column) {
        return of(type, column).dtype;
    }

    /** Copies field {@code ordinal} of {@code row} (not null) to {@code at} in {@code dst}. */
    void scalarToTensor(InternalRow row, int ordinal, MemorySegment dst, long at) {
        switch (this) {
            case BOOLEAN -> dst.set(JAVA_BYTE, at, (byte) (row.getBoolean(ordinal) ? 1 : 0));
            case BYTE -> dst.set(JAVA_BYTE, at, row.getByte(ordinal));
            case SHORT -> dst.set(JAVA_SHORT_UNALIGNED, at, row.getShort(ordinal));
            case INT -> dst.set(JAVA_INT_UNALIGNED, at, row.getInt(ordinal));
            case LONG -> dst.set(JAVA_LONG_UNALIGNED, at, row.getLong(ordinal));
            case FLOAT -> dst.set(JAVA_FLOAT_UNALIGNED, at, row.getFloat(ordinal));
            case DOUBLE -> dst.set(JAVA_DOUBLE_UNALIGNED, at, row.getDouble(ordinal));
        }
    }

    /** Copies element {@code i} of {@code array} (not null) to {@code at} in {@code dst}. */
    void elementToTensor(ArrayData array, int i, MemorySegment dst, long at) {
        switch (this) {
            case BOOLEAN -> dst.set(JAVA_BYTE, at, (byte) (array.getBoolean(i) ? 1 : 0));
            case BYTE -> dst.set(JAVA_BYTE, at, array.getByte(i));
            case SHORT -> dst.set(JAVA_SHORT_UNALIGNED, at, array.getShort(i));
            case INT -> dst.set(JAVA_INT_UNALIGNED, at, array.getInt(i));
            case LONG -> dst.set(JAVA_LONG_UNALIGNED, at, array.getLong(i));
            case FLOAT -> dst.set(JAVA_FLOAT_UNALIGNED, at, array.getFloat(i));
            case DOUBLE -> dst.set(JAVA_DOUBLE_UNALIGNED, at, array.getDouble(i));
        }
    }

    /**
     * Writes the value at {@code at} in {@code src} as field {@code ordinal} of the row that
     * {@code writer} writes. A bool byte other than 0 is true, as in torch and NumPy.
     */
    void tensorToScalar(MemorySegment src, long at, UnsafeWriter writer, int ordinal) {
        switch (this) {
            case BOOLEAN -> writer.write(ordinal, src.get(JAVA_BYTE, at) != 0);
            case BYTE -> writer.write(ordinal, src.get(JAVA_BYTE, at));
            case SHORT -> writer.write(ordinal, src.get(JAVA_SHORT_UNALIGNED, at));
            case INT -> writer.write(ordinal, src.get(JAVA_INT_UNALIGNED, at));
            case LONG -> writer.write(ordinal, src.get(JAVA_LONG_UNALIGNED, at));
            case FLOAT -> writer.write(ordinal, src.get(JAVA_FLOAT_UNALIGNED, at));
            case DOUBLE -> writer.write(ordinal, src.get(JAVA_DOUBLE_UNALIGNED, at));
        }
    }
}
