package io.github.dlpack4j.spark;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.ObjectStreamClass;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A model run over every row of a DataFrame, in the executors, batch by batch: each task packs its
 * partition's rows into tensors of {@code batchSize} rows ({@link RowsToTensors}), hands them to the
 * model in the executor's embedded Python without a copy ({@link ExecutorPython}), and turns the
 * model's output tensors into the output rows, read from the model's memory ({@link TensorsToRows}).
 * The output rows hold the pass-through columns, then the outputs.
 *
 * {@snippet :
 * BatchInference scoring = BatchInference.builder()
 *         .input("features", 256)                          // array<float> of 256: float32 [rows, 256]
 *         .passThrough("id")                               // copied to the output, and named in errors
 *         .model(ExecutorModel.fromSource("mlp", source, "load", weightsPath))
 *         .output("scores", DataTypes.FloatType, 16)       // the model returns float32 [rows, 16]
 *         .batchSize(1024)
 *         .build();
 * Dataset<Row> scores = scoring.transform(spark.read().parquet(input));   // id, scores
 * }
 *
 * <p>Errors fail the task, and so the job after Spark's retries: a null or an array of another
 * length names the column and the row (by its key column, the first pass-through column unless
 * {@link Builder#key} says otherwise); a Python error is the task's {@code PythonException}, whose
 * message holds the Python type, message and traceback; an output of another dtype or shape than
 * declared names the output.
 *
 * <p>The result is computed by Spark as any DataFrame is: each action runs the model again. The
 * module reaches Spark's rows through {@code Dataset.queryExecution()} and makes the result with the
 * classic session's {@code internalCreateDataFrame}, so it needs a classic {@code SparkSession}, not
 * a Spark Connect client.
 */
public final class BatchInference implements Serializable {
    private static final long serialVersionUID = 1L;
    /** The batch size when none is given. */
    public static final int DEFAULT_BATCH_SIZE = 1024;

    /** The model's inputs, in the order of its arguments. */
    private final List<Request> inputs;
    /** The columns copied to the output rows. */
    private final List<Request> passThrough;
    /** The model's outputs, in the order of its results. */
    private final List<TensorColumn> outputs;
    /** The column that names a refused row; null for none. */
    private final String key;
    /** The model. */
    private final ExecutorModel model;
    /** The most rows per batch. */
    private final int batchSize;

    private BatchInference(Builder b) {
        inputs = List.copyOf(b.inputs);
        passThrough = List.copyOf(b.passThrough);
        outputs = List.copyOf(b.outputs);
        key = b.key != null ? b.key : passThrough.isEmpty() ? null : passThrough.get(0).name();
        model = b.model;
        batchSize = b.batchSize;
    }

    /** {@return a builder} */
    public static Builder builder() {
        return new Builder();
    }

    /** {@return the model} */
    public ExecutorModel model() {
        return model;
    }

    /** {@return the most rows per batch} */
    public int batchSize() {
        return batchSize;
    }

    /**
     * Has each executor build this inference's model as it starts, on the warm-up's thread after
     * its Python and modules ({@link ExecutorWarmup}), instead of in its first task, which then finds
     * the model built (or waits for the build under way): adds the warm-up to {@code spark.plugins}
     * as {@link ExecutorPython#warmUp} does (its modules left as they are: {@code torch} unless set)
     * and this model, with its outputs, to {@value ExecutorWarmup#MODELS}. Call it before the
     * session starts, which sends the executors their settings. A model that fails to build there
     * is built again by the first task that needs it, which fails with the error. Idempotent.
     *
     * @param conf the application's configuration, changed in place
     * @return {@code conf}
     * @throws IllegalArgumentException if the model does not serialize (a {@link ExecutorModel.Loader}
     *                                  that holds what is not serializable)
     */
    public SparkConf warmUp(SparkConf conf) {
        Objects.requireNonNull(conf, "conf");
        if (!conf.contains(ExecutorWarmup.MODULES)) {
            ExecutorPython.warmUp(conf, "torch");
        } else {
            ExecutorPython.warmUp(conf, conf.get(ExecutorWarmup.MODULES).split(","));
        }
        String mine = new WarmUpModel(model, outputs).encode();
        String models = conf.get(ExecutorWarmup.MODELS, "").strip();
        if (!Arrays.asList(models.split(",")).contains(mine)) {
            conf.set(ExecutorWarmup.MODELS, models.isEmpty() ? mine : models + "," + mine);
        }
        return conf;
    }

    /**
     * Runs the model over {@code input}, lazily, as any transformation.
     *
     * @param input rows with every input and pass-through column
     * @return the pass-through columns and the outputs, a row per input row
     * @throws IllegalArgumentException naming the column, if one is missing or of another type than its use needs
     */
    public Dataset<Row> transform(Dataset<Row> input) {
        return transform(input, null);
    }

    /**
     * {@link #transform(Dataset)}, the tasks adding what they did to {@code metrics}.
     *
     * @param input   rows with every input and pass-through column
     * @param metrics where the tasks count rows, batches, process ids and times; null for none
     * @return the pass-through columns and the outputs, a row per input row
     * @throws IllegalArgumentException naming the column, if one is missing or of another type than its use needs
     */
    public Dataset<Row> transform(Dataset<Row> input, InferenceMetrics metrics) {
        Objects.requireNonNull(input, "input");
        if (!(input.sparkSession() instanceof org.apache.spark.sql.classic.SparkSession session)) {
            throw new UnsupportedOperationException("BatchInference needs a classic SparkSession: a Spark Connect "
                    + "client (" + input.sparkSession().getClass().getName() + ") cannot run JVM code in the executors");
        }
        StructType schema = input.schema();
        List<TensorColumn> in = resolve(inputs, schema);
        List<TensorColumn> through = resolve(passThrough, schema);
        Set<TensorColumn> packed = new LinkedHashSet<>(in);
        packed.addAll(through);
        Set<String> read = new LinkedHashSet<>();
        packed.forEach(c -> read.add(c.name()));
        if (key != null) {
            field(schema, key);
            read.add(key);
        }
        List<String> names = new ArrayList<>(read);
        Dataset<Row> selected = input.select(names.get(0), names.subList(1, names.size()).toArray(String[]::new));
        InferenceTask task = new InferenceTask(selected.schema(), List.copyOf(packed), in, through, outputs, key,
                model, batchSize, metrics);
        JavaRDD<InternalRow> scored = selected.queryExecution().toRdd().toJavaRDD().mapPartitions(task);
        return session.internalCreateDataFrame(scored.rdd(), task.outputSchema(), false);
    }

    /**
     * Runs the model over a Parquet dataset into a new one, reading and writing through Arrow's C++
     * Parquet implementation inside the tasks (the Parquet route): one task per input file, read in
     * record batches of whole model batches (up to 16,384 rows or 32 MiB of the columns read) that
     * become the model's input tensors without a copy; the model is called on {@code batchSize}
     * rows of them at a time, and its outputs are copied once, a read at a time, into the vectors
     * that Arrow's writer writes. It refuses what {@link #transform} refuses, with the same messages,
     * naming the file and the row's key. The output holds a file per input file that holds rows
     * ({@code part-NNNNN-<job>.parquet}, the input file's rows in their order: the pass-through
     * columns, then the outputs, none nullable), or one file without rows when there are none, and
     * {@code _SUCCESS}. A task attempt writes under {@code output/_temporary}; the driver moves the
     * files of the attempts that Spark took when the job has succeeded, so a retried, killed or
     * speculative attempt leaves no partial or second file, and a failed job leaves no part file.
     *
     * <p>Both paths are local paths or {@code file:} URIs that the driver and every executor see
     * alike (one machine, or a shared mount). Runs now: this is an action, not a transformation.
     * When the job fails (a refused row, the model's error), it throws Spark's
     * {@code SparkException}, undeclared as Scala throws it, whose message says why.
     *
     * @param spark   the application's session
     * @param input   a Parquet file, or a directory of them (names starting with {@code _} or {@code .} left out)
     * @param output  a directory that is absent or empty
     * @param metrics where the tasks count rows, batches, process ids and times; null for none
     * @return the rows written
     * @throws IllegalArgumentException naming the column or the path, if a column is missing or of
     *                                  another type than its use needs (in the first file; another
     *                                  file's fails its task naming the file), the output is not
     *                                  empty, a path is not local, or the input holds no file
     */
    public long transformParquet(SparkSession spark, String input, String output, InferenceMetrics metrics) {
        Objects.requireNonNull(spark, "spark");
        Objects.requireNonNull(input, "input");
        Objects.requireNonNull(output, "output");
        List<String> files = ParquetJob.inputFiles(ParquetJob.localPath(input, "input"));
        Set<String> needed = new LinkedHashSet<>();
        inputs.forEach(r -> needed.add(r.name()));
        passThrough.forEach(r -> needed.add(r.name()));
        StructType schema = ArrowColumns.sparkSchema(files.getFirst(), needed);
        List<TensorColumn> in = resolve(inputs, schema);
        List<TensorColumn> through = resolve(passThrough, schema);
        Set<TensorColumn> packed = new LinkedHashSet<>(in);
        packed.addAll(through);
        if (key != null) {
            field(schema, key);
        }
        for (TensorColumn c : packed) {
            ArrowColumns.valueType(c); // refuses booleans on the driver
        }
        List<TensorColumn> written = new ArrayList<>(through);
        written.addAll(outputs);
        return ParquetJob.run(spark, input, output, List.copyOf(packed), in, through, outputs, key, model, batchSize,
                metrics, TensorsToRows.of(written).schema());
    }

    /**
     * {@link #transformParquet(SparkSession, String, String, InferenceMetrics)} without metrics.
     *
     * @param spark  the application's session
     * @param input  a Parquet file, or a directory of them
     * @param output a directory that is absent or empty
     * @return the rows written
     * @throws IllegalArgumentException as the method with metrics
     */
    public long transformParquet(SparkSession spark, String input, String output) {
        return transformParquet(spark, input, output, null);
    }

    private static List<TensorColumn> resolve(List<Request> requests, StructType schema) {
        List<TensorColumn> columns = new ArrayList<>();
        for (Request r : requests) {
            StructField f = field(schema, r.name());
            DataType element = r.length() == TensorColumn.SCALAR ? f.dataType()
                    : f.dataType() instanceof ArrayType a ? a.elementType() : null;
            if (element == null) {
                throw new IllegalArgumentException("column " + r.name() + " is " + f.dataType().simpleString()
                        + ", not the array of " + r.length() + " values it is declared as");
            }
            TensorColumn c = new TensorColumn(r.name(), element, r.length());
            c.checkReadable(f);
            columns.add(c);
        }
        return columns;
    }

    private static StructField field(StructType schema, String name) {
        for (StructField f : schema.fields()) {
            if (f.name().equals(name)) {
                return f;
            }
        }
        throw new IllegalArgumentException("the input has no column " + name + "; its columns are "
                + List.of(schema.fieldNames()));
    }

    /**
     * A model that the warm-up builds, with the outputs that the runtime's model declares, as
     * {@value ExecutorWarmup#MODELS} carries it.
     *
     * @param model   the model
     * @param outputs its outputs, in order
     */
    record WarmUpModel(ExecutorModel model, List<TensorColumn> outputs) implements Serializable {
        /** {@return this, serialized, in Base64} */
        String encode() {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
                out.writeObject(this);
            } catch (IOException e) {
                throw new IllegalArgumentException("model " + model.name() + " does not serialize: " + e, e);
            }
            return Base64.getEncoder().encodeToString(bytes.toByteArray());
        }

        /** {@return the model that {@link #encode} wrote, its classes loaded by {@code loader}} */
        static WarmUpModel decode(String encoded, ClassLoader loader) {
            try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(Base64.getDecoder().decode(encoded))) {
                @Override
                protected Class<?> resolveClass(ObjectStreamClass desc) throws IOException, ClassNotFoundException {
                    try {
                        return Class.forName(desc.getName(), false, loader);
                    } catch (ClassNotFoundException e) {
                        return super.resolveClass(desc);
                    }
                }
            }) {
                return (WarmUpModel) in.readObject();
            } catch (IOException | ClassNotFoundException e) {
                throw new IllegalArgumentException("cannot read a model of " + ExecutorWarmup.MODELS + ": " + e, e);
            }
        }
    }

    /**
     * A column the builder was told of: its type comes from the input's schema.
     *
     * @param name   the column's name
     * @param length the values per row of an array, or {@link TensorColumn#SCALAR}
     */
    private record Request(String name, int length) implements Serializable {
    }

    /** Says what a {@link BatchInference} reads, runs and writes. */
    public static final class Builder {
        private final List<Request> inputs = new ArrayList<>();
        private final List<Request> passThrough = new ArrayList<>();
        private final List<TensorColumn> outputs = new ArrayList<>();
        private String key;
        private ExecutorModel model;
        private int batchSize = DEFAULT_BATCH_SIZE;

        private Builder() {
        }

        /**
         * A numeric input column: the model's next argument, a tensor {@code [rows]} of the column's dtype.
         *
         * @param column the column's name
         * @return this builder
         */
        public Builder input(String column) {
            inputs.add(new Request(Objects.requireNonNull(column, "column"), TensorColumn.SCALAR));
            return this;
        }

        /**
         * A fixed-length array input column: the model's next argument, a tensor {@code [rows, length]}
         * of its elements' dtype. A row whose array has another length fails the job.
         *
         * @param column the column's name
         * @param length the values in each row's array
         * @return this builder
         */
        public Builder input(String column, int length) {
            inputs.add(new Request(Objects.requireNonNull(column, "column"), checkLength(column, length)));
            return this;
        }

        /**
         * A numeric column copied to the output rows as it is (an id, say), through a tensor that
         * stays in Java.
         *
         * @param column the column's name
         * @return this builder
         */
        public Builder passThrough(String column) {
            passThrough.add(new Request(Objects.requireNonNull(column, "column"), TensorColumn.SCALAR));
            return this;
        }

        /**
         * A fixed-length array column copied to the output rows as it is.
         *
         * @param column the column's name
         * @param length the values in each row's array
         * @return this builder
         */
        public Builder passThrough(String column, int length) {
            passThrough.add(new Request(Objects.requireNonNull(column, "column"), checkLength(column, length)));
            return this;
        }

        /**
         * The column whose value names a refused row in error messages; by default the first
         * pass-through column.
         *
         * @param column the column's name, of any type
         * @return this builder
         */
        public Builder key(String column) {
            key = Objects.requireNonNull(column, "column");
            return this;
        }

        /**
         * A numeric output: the model's next output, a tensor {@code [rows]}, becomes this column.
         *
         * @param column the output column's name
         * @param type   its Spark type, whose dtype the model's tensor must have
         * @return this builder
         */
        public Builder output(String column, DataType type) {
            outputs.add(TensorColumn.scalar(column, type));
            return this;
        }

        /**
         * An array output: the model's next output, a tensor {@code [rows, length]}, becomes this
         * column, an {@code array<type>} of {@code length} values in every row.
         *
         * @param column      the output column's name
         * @param elementType the Spark type of its elements, whose dtype the model's tensor must have
         * @param length      the values in each row
         * @return this builder
         */
        public Builder output(String column, DataType elementType, int length) {
            outputs.add(TensorColumn.array(column, elementType, length));
            return this;
        }

        /**
         * The model to run.
         *
         * @param model the model
         * @return this builder
         */
        public Builder model(ExecutorModel model) {
            this.model = Objects.requireNonNull(model, "model");
            return this;
        }

        /**
         * The most rows per batch ({@value #DEFAULT_BATCH_SIZE} if not set); the last batch of a
         * partition may hold fewer.
         *
         * @param rows the batch size
         * @return this builder
         */
        public Builder batchSize(int rows) {
            if (rows <= 0) {
                throw new IllegalArgumentException("batchSize must be positive, not " + rows);
            }
            batchSize = rows;
            return this;
        }

        /**
         * {@return the inference}
         *
         * @throws IllegalStateException if no model, input or output was given, or two output or
         *                               pass-through columns share a name
         */
        public BatchInference build() {
            if (model == null || inputs.isEmpty() || outputs.isEmpty()) {
                throw new IllegalStateException("a BatchInference needs a model, an input and an output");
            }
            Set<String> names = new LinkedHashSet<>();
            for (String n : passThrough.stream().map(Request::name).toList()) {
                if (!names.add(n)) {
                    throw new IllegalStateException("two output columns are named " + n);
                }
            }
            for (TensorColumn c : outputs) {
                if (!names.add(c.name())) {
                    throw new IllegalStateException("two output columns are named " + c.name());
                }
            }
            return new BatchInference(this);
        }

        private static int checkLength(String column, int length) {
            if (length <= 0) {
                throw new IllegalArgumentException("column " + column + ": an array needs a positive length, not "
                        + length);
            }
            return length;
        }
    }
}
