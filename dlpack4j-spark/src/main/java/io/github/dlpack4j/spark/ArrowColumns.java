package io.github.dlpack4j.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.DataTypes;

/**
 * The tensor columns of a {@link BatchInference} as Arrow sees them on the Parquet route: which
 * Arrow types a file may hold for each, and the schema of the batches written.
 */
final class ArrowColumns {
    private ArrowColumns() {
    }

    /**
     * The Arrow type of a column's values (a scalar column's, or an array's elements).
     *
     * @throws IllegalArgumentException for boolean columns, which Arrow packs a bit per value, so no
     *                                  tensor can view them
     */
    static ArrowType valueType(TensorColumn c) {
        org.apache.spark.sql.types.DataType t = c.elementType();
        if (t.equals(DataTypes.ByteType)) {
            return new ArrowType.Int(8, true);
        } else if (t.equals(DataTypes.ShortType)) {
            return new ArrowType.Int(16, true);
        } else if (t.equals(DataTypes.IntegerType)) {
            return new ArrowType.Int(32, true);
        } else if (t.equals(DataTypes.LongType)) {
            return new ArrowType.Int(64, true);
        } else if (t.equals(DataTypes.FloatType)) {
            return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
        } else if (t.equals(DataTypes.DoubleType)) {
            return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
        }
        throw new IllegalArgumentException("column " + c.name() + ": the Parquet route reads no " + t.simpleString()
                + " columns (Arrow packs them a bit per value, which no tensor views); use transform, the row route");
    }

    /**
     * Checks that a file's schema holds each column as the job reads it, and the key column.
     *
     * @param file    the file's name, for the message
     * @param schema  the file's Arrow schema
     * @param columns the tensor columns read
     * @param key     the key column, or null
     * @throws IllegalArgumentException naming the file, the column, what it holds and what the job needs
     */
    static void checkFile(String file, Schema schema, List<TensorColumn> columns, String key) {
        for (TensorColumn c : columns) {
            Field f = find(file, schema, c.name());
            ArrowType values = valueType(c);
            ArrowType t = f.getType();
            boolean ok;
            if (c.isArray()) {
                ok = (t instanceof ArrowType.List || t instanceof ArrowType.LargeList || t instanceof ArrowType.FixedSizeList)
                        && f.getChildren().size() == 1 && f.getChildren().getFirst().getType().equals(values);
            } else {
                ok = t.equals(values);
            }
            if (!ok) {
                throw new IllegalArgumentException("file " + file + ": column " + c.name() + " is " + describe(f)
                        + "; the job reads it as " + c.sparkType().simpleString() + " (" + c.describe()
                        + "), as in the dataset's first file");
            }
        }
        if (key != null) {
            find(file, schema, key);
        }
    }

    private static Field find(String file, Schema schema, String name) {
        for (Field f : schema.getFields()) {
            if (f.getName().equals(name)) {
                return f;
            }
        }
        throw new IllegalArgumentException("file " + file + " has no column " + name + "; its columns are "
                + schema.getFields().stream().map(Field::getName).toList());
    }

    /** {@return e.g. "List<Int(64, true)>"} */
    private static String describe(Field f) {
        return f.getChildren().isEmpty() ? f.getType().toString()
                : f.getType() + "<" + f.getChildren().stream().map(ArrowColumns::describe).toList().toString()
                        .replaceAll("^\\[|\\]$", "") + ">";
    }

    /**
     * The schema of the batches written: each column not nullable, an array column a fixed-size
     * list of values that are not null, as {@code ArrowTensors.toVector} makes them (Parquet stores
     * it as a list of required elements, the row route's {@code array<T>} without nulls).
     *
     * @param written the columns written, in order
     * @return the schema
     */
    static Schema outputSchema(List<TensorColumn> written) {
        List<Field> fields = new ArrayList<>();
        for (TensorColumn c : written) {
            FieldType values = FieldType.notNullable(valueType(c));
            fields.add(c.isArray()
                    ? new Field(c.name(), FieldType.notNullable(new ArrowType.FixedSizeList(c.length())),
                            List.of(new Field("element", values, null)))
                    : new Field(c.name(), values, null));
        }
        return new Schema(fields);
    }
}
