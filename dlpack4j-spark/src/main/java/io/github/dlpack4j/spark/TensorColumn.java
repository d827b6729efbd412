package io.github.dlpack4j.spark;

import java.io.Serializable;
import java.util.Objects;

import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;

/**
 * A column of rows that is a tensor of a batch: a numeric column ({@code long}, {@code float}, ...)
 * is a tensor of shape {@code [rows]}, a fixed-length array column ({@code array<float>} of
 * {@code length} values in every row) a tensor of shape {@code [rows, length]}, row-major. The
 * tensor's dtype is the column's: {@code byte} int8, {@code short} int16, {@code int} int32,
 * {@code long} int64, {@code float} float32, {@code double} float64, {@code boolean} bool.
 *
 * @param name        the column's name
 * @param elementType the Spark type of the column (a scalar column) or of its array's elements
 * @param length      the values per row of an array column; {@link #SCALAR} for a scalar column
 */
public record TensorColumn(String name, DataType elementType, int length) implements Serializable {
    /** The {@link #length()} of a scalar column. */
    public static final int SCALAR = -1;

    /**
     * Checks the fields.
     *
     * @throws IllegalArgumentException if {@code elementType} has no tensor dtype or {@code length}
     *                                  is neither {@link #SCALAR} nor positive
     */
    public TensorColumn {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(elementType, "elementType");
        SparkTypes.dtype(elementType, name);
        if (length != SCALAR && length <= 0) {
            throw new IllegalArgumentException("column " + name + ": an array column needs a positive length, not "
                    + length);
        }
    }

    /**
     * A numeric column: a tensor of shape {@code [rows]}.
     *
     * @param name the column's name
     * @param type its Spark type ({@code DataTypes.LongType}, ...)
     * @return the column
     */
    public static TensorColumn scalar(String name, DataType type) {
        return new TensorColumn(name, type, SCALAR);
    }

    /**
     * An array column of {@code length} values in every row: a tensor of shape {@code [rows, length]}.
     *
     * @param name        the column's name
     * @param elementType the Spark type of its elements ({@code DataTypes.FloatType}, ...)
     * @param length      the values in each row
     * @return the column
     */
    public static TensorColumn array(String name, DataType elementType, int length) {
        return new TensorColumn(name, elementType, length);
    }

    /** {@return whether this is an array column} */
    public boolean isArray() {
        return length != SCALAR;
    }

    /** {@return the dlpack4j dtype of the column's tensor} */
    public io.github.dlpack4j.DataType dtype() {
        return SparkTypes.dtype(elementType, name);
    }

    /** {@return the values one row holds: 1 for a scalar column} */
    public int valuesPerRow() {
        return isArray() ? length : 1;
    }

    /**
     * The shape of this column's tensor for a batch.
     *
     * @param rows the rows of the batch
     * @return {@code [rows]} or {@code [rows, length]}
     */
    public long[] shape(long rows) {
        return isArray() ? new long[] {rows, length} : new long[] {rows};
    }

    /** {@return the column's Spark type: {@code elementType}, or an array of it without nulls} */
    public DataType sparkType() {
        return isArray() ? DataTypes.createArrayType(elementType, false) : elementType;
    }

    /** {@return the column as a non-nullable field of a schema} */
    public StructField field() {
        return new StructField(name, sparkType(), false, Metadata.empty());
    }

    /**
     * Checks that a field of a schema can be read as this column: the same element type, and an
     * array where this is an array column.
     *
     * @param field the field of the rows' schema
     * @throws IllegalArgumentException naming the column, its type and what it needs
     */
    void checkReadable(StructField field) {
        DataType t = field.dataType();
        boolean ok = isArray()
                ? t instanceof ArrayType a && a.elementType().equals(elementType)
                : t.equals(elementType);
        if (!ok) {
            throw new IllegalArgumentException("column " + name + " is " + t.simpleString() + "; as a tensor column of "
                    + describe() + " it must be " + sparkType().simpleString());
        }
    }

    /** {@return e.g. "float32 [rows, 256]"} */
    String describe() {
        return dtype() + (isArray() ? " [rows, " + length + "]" : " [rows]");
    }
}
