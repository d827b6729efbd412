package io.github.dlpack4j.spark;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import org.apache.arrow.dataset.file.FileFormat;
import org.apache.arrow.dataset.file.FileSystemDatasetFactory;
import org.apache.arrow.dataset.jni.NativeMemoryPool;

import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

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
        DataType t = c.elementType();
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
     * A Parquet file's schema as Spark types, read by Arrow's C++ from the file's footer (Spark's
     * own schema inference took 0.1-0.8 s a job, and 3.7 s in a new application): the columns whose
     * Arrow types have Spark counterparts a tensor column may hold (numbers, booleans, and lists of
     * them), and strings.
     *
     * @param file   the file
     * @param needed the columns the job reads: one of them of another type is refused here
     * @return the file's schema, the columns without such counterparts typed {@code void} (a key may be of any type)
     * @throws IllegalArgumentException naming the file and a needed column of another type
     */
    static StructType sparkSchema(String file, Collection<String> needed) {
        Schema schema;
        try (FileSystemDatasetFactory factory = new FileSystemDatasetFactory(ParquetTask.allocator(),
                NativeMemoryPool.getDefault(), FileFormat.PARQUET, Path.of(file).toUri().toString())) {
            schema = factory.inspect();
        }
        List<StructField> fields = new ArrayList<>();
        for (Field f : schema.getFields()) {
            DataType t = sparkType(f);
            if (t != null) {
                fields.add(new StructField(f.getName(), t, f.isNullable(), Metadata.empty()));
            } else if (needed.contains(f.getName())) {
                throw new IllegalArgumentException("file " + Path.of(file).getFileName() + ": column " + f.getName()
                        + " is " + describe(f) + ", which no tensor column holds");
            } else {
                fields.add(new StructField(f.getName(), DataTypes.NullType, true, Metadata.empty())); // a key: any type
            }
        }
        return new StructType(fields.toArray(StructField[]::new));
    }

    /** {@return the Spark type of an Arrow field, or null for none that this route maps} */
    private static DataType sparkType(Field f) {
        ArrowType t = f.getType();
        if (t instanceof ArrowType.Int i && i.getIsSigned()) {
            return switch (i.getBitWidth()) {
                case 8 -> DataTypes.ByteType;
                case 16 -> DataTypes.ShortType;
                case 32 -> DataTypes.IntegerType;
                case 64 -> DataTypes.LongType;
                default -> null;
            };
        } else if (t instanceof ArrowType.FloatingPoint fp) {
            return fp.getPrecision() == FloatingPointPrecision.SINGLE ? DataTypes.FloatType
                    : fp.getPrecision() == FloatingPointPrecision.DOUBLE ? DataTypes.DoubleType : null;
        } else if (t instanceof ArrowType.Bool) {
            return DataTypes.BooleanType;
        } else if (t instanceof ArrowType.Utf8 || t instanceof ArrowType.LargeUtf8) {
            return DataTypes.StringType;
        } else if (t instanceof ArrowType.List || t instanceof ArrowType.LargeList || t instanceof ArrowType.FixedSizeList) {
            Field child = f.getChildren().getFirst();
            DataType element = sparkType(child);
            return element == null ? null : DataTypes.createArrayType(element, child.isNullable());
        }
        return null;
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
