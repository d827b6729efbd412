package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.python.PyObject;

import org.apache.spark.SparkException;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Batch inference in local mode: the executor is this JVM, its task threads share one interpreter. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LocalInferenceTest {
    /** Every type a tensor column may hold, as a scalar and as an array of 3. */
    private static final List<DataType> TYPES = List.of(DataTypes.BooleanType, DataTypes.ByteType,
            DataTypes.ShortType, DataTypes.IntegerType, DataTypes.LongType, DataTypes.FloatType, DataTypes.DoubleType);
    private static final String IDENTITY = """
            import torch

            def load():
                return lambda *xs: tuple(torch.from_dlpack(x) for x in xs)
            """;
    private static final String DOUBLE_IT = """
            import torch

            def load():
                def double(x):
                    return torch.from_dlpack(x) * 2
                return double
            """;

    private static SparkSession spark;

    @BeforeAll
    static void startSpark() {
        spark = Sparks.local();
    }

    @Test
    void every_supported_column_type_goes_through_torch_and_back_with_its_exact_values(@TempDir Path dir) {
        List<StructField> fields = new ArrayList<>(List.of(field("id", DataTypes.LongType)));
        for (DataType t : TYPES) {
            fields.add(field("s_" + t.typeName(), t));
            fields.add(field("a_" + t.typeName(), DataTypes.createArrayType(t, false)));
        }
        StructType schema = new StructType(fields.toArray(StructField[]::new));
        List<Row> rows = new ArrayList<>();
        for (int id = 0; id < 60; id++) {
            List<Object> values = new ArrayList<>(List.of((long) id));
            for (DataType t : TYPES) {
                values.add(value(t, id, 0));
                values.add(List.of(value(t, id, 1), value(t, id, 2), value(t, id, 3)));
            }
            rows.add(RowFactory.create(values.stream().map(LocalInferenceTest::toSpark).toArray()));
        }
        // Through Parquet, in three files: the rows then come from Spark's scan, in three partitions.
        String input = dir.resolve("in").toString();
        spark.createDataFrame(rows, schema).repartition(3).write().parquet(input);

        BatchInference.Builder b = BatchInference.builder().passThrough("id")
                .model(ExecutorModel.fromSource("identity", IDENTITY, "load")).batchSize(7);
        for (DataType t : TYPES) {
            b.input("s_" + t.typeName()).output("s_" + t.typeName(), t);
            b.input("a_" + t.typeName(), 3).output("a_" + t.typeName(), t, 3);
        }
        Dataset<Row> out = b.build().transform(spark.read().parquet(input));

        assertThat(out.schema().fieldNames()).containsExactly(schema.fieldNames());
        assertThat(sortedValues(out.collectAsList())).isEqualTo(sortedValues(rows));
    }

    @Test
    void a_model_output_becomes_a_column_read_from_torchs_memory() {
        Dataset<Row> in = spark.createDataFrame(List.of(RowFactory.create(1L, toSpark(List.of(1f, 2f))),
                RowFactory.create(2L, toSpark(List.of(3f, -4f)))), new StructType(new StructField[] {
                    field("id", DataTypes.LongType), field("x", DataTypes.createArrayType(DataTypes.FloatType))}));
        BatchInference doubling = BatchInference.builder().input("x", 2).passThrough("id")
                .model(ExecutorModel.fromSource("double", DOUBLE_IT, "load")).output("y", DataTypes.FloatType, 2).build();

        List<Row> out = doubling.transform(in).orderBy("id").collectAsList();

        assertThat(out).extracting(r -> r.getLong(0), r -> r.getList(1))
                .containsExactly(org.assertj.core.groups.Tuple.tuple(1L, List.of(2f, 4f)),
                        org.assertj.core.groups.Tuple.tuple(2L, List.of(6f, -8f)));
    }

    @Test
    void a_null_array_fails_the_job_naming_the_column_and_the_rows_id() {
        assertThatThrownBy(() -> score(features(List.of(1f, 2f, 3f), null)))
                .isInstanceOf(SparkException.class)
                .hasMessageContaining("column features of the row with id=1 (row 1 of partition 0) is null");
    }

    @Test
    void a_short_array_fails_the_job_naming_the_column_and_the_rows_id() {
        assertThatThrownBy(() -> score(features(List.of(1f, 2f, 3f), List.of(1f, 2f, 3f), List.of(1f, 2f))))
                .isInstanceOf(SparkException.class)
                .hasMessageContaining("column features of the row with id=2 (row 2 of partition 0) holds 2 values; "
                        + "every row needs 3");
    }

    @Test
    void a_long_array_and_a_null_element_fail_the_job_naming_the_column_and_the_rows_id() {
        assertThatThrownBy(() -> score(features(List.of(1f, 2f, 3f, 4f))))
                .isInstanceOf(SparkException.class)
                .hasMessageContaining("column features of the row with id=0 (row 0 of partition 0) holds 4 values");
        assertThatThrownBy(() -> score(features(List.of(1f, 2f, 3f), Arrays.asList(1f, null, 3f))))
                .isInstanceOf(SparkException.class)
                .hasMessageContaining("column features of the row with id=1 (row 1 of partition 0) holds a null at index 1");
    }

    @Test
    void a_null_number_fails_the_job_naming_the_column_and_the_rows_id() {
        StructType schema = new StructType(new StructField[] {field("id", DataTypes.LongType),
                field("x", DataTypes.DoubleType)});
        Dataset<Row> in = spark.createDataFrame(List.of(RowFactory.create(5L, 1.0), RowFactory.create(6L, null)), schema)
                .coalesce(1);
        BatchInference inference = BatchInference.builder().input("x").passThrough("id")
                .model(ExecutorModel.fromSource("double", DOUBLE_IT, "load")).output("y", DataTypes.DoubleType).build();

        assertThatThrownBy(() -> inference.transform(in).collectAsList())
                .isInstanceOf(SparkException.class)
                .hasMessageContaining("column x of the row with id=6 (row 1 of partition 0) is null");
    }

    @Test
    void a_column_without_a_dtype_is_refused_before_any_job_runs() {
        Dataset<Row> in = spark.createDataFrame(List.of(RowFactory.create(1L, "a")), new StructType(new StructField[] {
                field("id", DataTypes.LongType), field("name", DataTypes.StringType)}));
        BatchInference inference = BatchInference.builder().input("name").passThrough("id")
                .model(ExecutorModel.fromSource("double", DOUBLE_IT, "load")).output("y", DataTypes.DoubleType).build();

        assertThatThrownBy(() -> inference.transform(in))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("column name: string has no tensor dtype");
    }

    @Test
    void a_python_error_fails_the_task_with_the_python_exception() {
        String failing = """
                def load():
                    def score(features):
                        raise ValueError("the model cannot score these features")
                    return score
                """;
        BatchInference inference = BatchInference.builder().input("features", 3).passThrough("id")
                .model(ExecutorModel.fromSource("failing", failing, "load"))
                .output("scores", DataTypes.FloatType, 3).build();

        assertThatThrownBy(() -> inference.transform(features(List.of(1f, 2f, 3f))).collectAsList())
                .isInstanceOf(SparkException.class)
                .hasMessageContaining("io.github.dlpack4j.python.PythonException: ValueError: "
                        + "the model cannot score these features")
                .hasMessageContaining("File \"<model failing>\", line 3, in score");
    }

    @Test
    void an_output_of_another_shape_than_declared_fails_naming_the_output() {
        String narrow = """
                import torch

                def load():
                    return lambda x: torch.from_dlpack(x)[:, :2]
                """;
        BatchInference inference = BatchInference.builder().input("features", 3).passThrough("id")
                .model(ExecutorModel.fromSource("narrow", narrow, "load"))
                .output("scores", DataTypes.FloatType, 3).build();

        assertThatThrownBy(() -> inference.transform(features(List.of(1f, 2f, 3f))).collectAsList())
                .isInstanceOf(SparkException.class)
                .hasMessageContaining("model narrow: output scores is float32 [1, 2] for a batch of 1 rows; "
                        + "the column array<float> needs float32 [1, 3]");
    }

    @Test
    void the_model_is_loaded_once_per_executor_and_shared_by_its_task_threads() {
        String counting = """
                import sys, threading, time, torch

                def load():
                    sys.dlpack4j_loads = getattr(sys, "dlpack4j_loads", 0) + 1
                    sys.dlpack4j_threads = set()
                    def score(x):
                        sys.dlpack4j_threads.add(threading.get_ident())
                        time.sleep(0.05)  # long enough for both task threads to be scoring
                        return torch.from_dlpack(x) + 1
                    return score
                """;
        List<Row> rows = new ArrayList<>();
        for (long id = 0; id < 80; id++) {
            rows.add(RowFactory.create(id, (double) id));
        }
        Dataset<Row> in = spark.createDataFrame(rows, new StructType(new StructField[] {
                field("id", DataTypes.LongType), field("x", DataTypes.DoubleType)})).repartition(8);
        BatchInference inference = BatchInference.builder().input("x").passThrough("id").batchSize(4)
                .model(ExecutorModel.fromSource("counting", counting, "load")).output("y", DataTypes.DoubleType).build();

        List<Row> out = inference.transform(in).collectAsList();

        assertThat(out).hasSize(80).allSatisfy(r -> assertThat(r.getDouble(1)).isEqualTo(r.getLong(0) + 1.0));
        try (PyObject loads = ExecutorPython.get().eval("__import__('sys').dlpack4j_loads");
             PyObject threads = ExecutorPython.get().eval("len(__import__('sys').dlpack4j_threads)")) {
            assertThat(loads.asLong()).as("loads of the model in this JVM").isEqualTo(1);
            assertThat(threads.asLong()).as("task threads that called it").isGreaterThanOrEqualTo(2);
        }
    }

    @Test
    void metrics_count_the_rows_and_batches_and_time_each_part_of_a_batch() {
        List<Row> rows = new ArrayList<>();
        for (long id = 0; id < 100; id++) {
            rows.add(RowFactory.create(id, toSpark(List.of((float) id, 1f, 2f))));
        }
        Dataset<Row> in = spark.createDataFrame(rows, new StructType(new StructField[] {field("id", DataTypes.LongType),
                field("features", DataTypes.createArrayType(DataTypes.FloatType))})).coalesce(1);
        InferenceMetrics metrics = InferenceMetrics.register(spark.sparkContext());
        BatchInference inference = BatchInference.builder().input("features", 3).passThrough("id").batchSize(10)
                .model(ExecutorModel.fromSource("double", DOUBLE_IT, "load")).output("y", DataTypes.FloatType, 3).build();

        assertThat(inference.transform(in, metrics).count()).isEqualTo(100);

        assertThat(metrics.rows()).isEqualTo(100);
        assertThat(metrics.batches()).isEqualTo(10);
        assertThat(metrics.executorPids()).containsExactly(ProcessHandle.current().pid());
        assertThat(metrics.modelMicrosPerBatch()).isPositive();
        assertThat(metrics.exchangeMicrosPerBatch()).isPositive();
        assertThat(metrics.packMicrosPerBatch()).isPositive();
        assertThat(metrics.unpackMicrosPerBatch()).isPositive();
        assertThat(metrics.toString()).startsWith("per batch: pack ");
    }

    /** Scores {@code features} with the doubling model: rows of id and score, sorted by id. */
    private static List<Row> score(Dataset<Row> features) {
        return BatchInference.builder().input("features", 3).passThrough("id")
                .model(ExecutorModel.fromSource("double", DOUBLE_IT, "load")).output("scores", DataTypes.FloatType, 3)
                .build().transform(features).collectAsList();
    }

    /** One partition of rows {@code id, features}, the ids counting from 0. */
    @SafeVarargs
    private static Dataset<Row> features(List<Float>... arrays) {
        List<Row> rows = new ArrayList<>();
        for (int id = 0; id < arrays.length; id++) {
            rows.add(RowFactory.create((long) id, arrays[id] == null ? null : toSpark(arrays[id])));
        }
        return spark.createDataFrame(rows, new StructType(new StructField[] {field("id", DataTypes.LongType),
                field("features", DataTypes.createArrayType(DataTypes.FloatType, true))})).coalesce(1);
    }

    private static StructField field(String name, DataType type) {
        return new StructField(name, type, true, Metadata.empty());
    }

    /** A value of type {@code t} for row {@code id}, the extremes of the type among them. */
    private static Object value(DataType t, int id, int k) {
        int v = id * 4 + k;
        if (t == DataTypes.BooleanType) {
            return v % 3 == 0;
        } else if (t == DataTypes.ByteType) {
            return (byte) (v == 1 ? Byte.MIN_VALUE : v == 2 ? Byte.MAX_VALUE : v - 100);
        } else if (t == DataTypes.ShortType) {
            return (short) (v == 1 ? Short.MIN_VALUE : v == 2 ? Short.MAX_VALUE : v * 101);
        } else if (t == DataTypes.IntegerType) {
            return v == 1 ? Integer.MIN_VALUE : v == 2 ? Integer.MAX_VALUE : v * 100_003;
        } else if (t == DataTypes.LongType) {
            return v == 1 ? Long.MIN_VALUE : v == 2 ? Long.MAX_VALUE : v * 10_000_000_019L;
        } else if (t == DataTypes.FloatType) {
            float[] special = {Float.NaN, -0.0f, Float.MIN_VALUE, Float.MAX_VALUE, Float.NEGATIVE_INFINITY};
            return v < special.length ? special[v] : v / 7f;
        } else {
            double[] special = {Double.NaN, -0.0, Double.MIN_VALUE, -Double.MAX_VALUE, Double.POSITIVE_INFINITY};
            return v < special.length ? special[v] : v / 7.0;
        }
    }

    /** Lists as Spark's rows take arrays. */
    private static Object toSpark(Object value) {
        return value instanceof List<?> l ? scala.jdk.javaapi.CollectionConverters.asScala(l).toSeq() : value;
    }

    /** The rows' values as Java lists (whose equals tells NaN from NaN and -0.0 from 0.0 as Float.equals does), by id. */
    private static List<List<Object>> sortedValues(List<Row> rows) {
        List<List<Object>> values = new ArrayList<>();
        for (Row r : rows) {
            List<Object> v = new ArrayList<>();
            for (int i = 0; i < r.size(); i++) {
                Object o = r.get(i);
                v.add(o instanceof scala.collection.Seq<?> s ? new ArrayList<>(scala.jdk.javaapi.CollectionConverters.asJava(s)) : o);
            }
            values.add(v);
        }
        values.sort(Comparator.comparingLong(v -> (Long) v.get(0)));
        return values;
    }
}
