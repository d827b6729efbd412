package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

import org.apache.spark.SparkException;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Parquet route ({@link BatchInference#transformParquet}) in local mode: Arrow's C++ reader and
 * writer in the tasks, inputs written by pyarrow in every layout it has, outputs compared bit for
 * bit with torch's and with the row route's.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ParquetRouteTest {
    private static final String IDENTITY = """
            import torch

            def load():
                return lambda *xs: tuple(torch.from_dlpack(x) for x in xs)
            """;

    private static SparkSession spark;
    private static Python py;

    @BeforeAll
    static void startSpark() {
        spark = Sparks.local();
        py = Sparks.parquetPython();
        py.exec("""
                def rows_of(path, column, n):
                    t = pq.read_table(path).sort_by("id")
                    values = t.column(column).combine_chunks().values.to_numpy(zero_copy_only=False)
                    return t.column("id").to_pylist(), values.reshape(-1, n)
                """);
    }


    private static BatchInference mlp(Path weights, int batch) {
        return BatchInference.builder().input("features", 256).passThrough("id").batchSize(batch)
                .model(ExecutorModel.fromSource("mlp", ClusterInferenceTest.MLP, "load", weights.toString(), 1))
                .output("scores", DataTypes.FloatType, 16).build();
    }

    /** Writes seeded mlp weights and four files of 1,500 rows (ids 0..5999), one row group each. */
    private static void mlpInput(Path input, Path weights) {
        py.exec(String.format("""
                os.makedirs(%1$s)
                for part in range(4):
                    pq.write_table(features_table(part * 1500, 1500, 256, part), f"{%1$s}/part-{part}.parquet")
                torch.manual_seed(0)
                mlp = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 16))
                torch.save(mlp.state_dict(), %2$s)
                """, Sparks.pyLiteral(input), Sparks.pyLiteral(weights)));
    }

    /** auto: pyarrow in the executors' interpreter (it has it); arrow: Arrow Java's DatasetFileWriter. */
    @ParameterizedTest
    @ValueSource(strings = {"auto", "arrow"})
    void the_mlp_scores_a_parquet_dataset_bit_for_bit_as_torch_and_as_the_row_route_with_either_writer(String writer,
            @TempDir Path dir) throws InterruptedException {
        Path input = dir.resolve("in");
        Path weights = dir.resolve("mlp.pt");
        mlpInput(input, weights);
        InferenceMetrics metrics = InferenceMetrics.register(spark.sparkContext());

        long rows;
        spark.conf().set(ParquetJob.WRITER, writer);
        try {
            rows = mlp(weights, 512).transformParquet(spark, input.toString(), dir.resolve("arrow").toString(), metrics);
        } finally {
            spark.conf().unset(ParquetJob.WRITER);
        }
        mlp(weights, 512).transform(spark.read().parquet(input.toString())).write()
                .parquet(dir.resolve("rows").toString());

        assertThat(rows).isEqualTo(6000);
        assertThat(metrics.rows()).isEqualTo(6000);
        assertThat(metrics.batches()).as("three batches of at most 512 per file of 1500").isEqualTo(12);
        assertThat(metrics.processCpuSeconds()).isPositive();
        // torch on the same batches: each file's rows 512 at a time, as both routes batch them
        py.exec(String.format("""
                def torch_scores(input, weights):
                    torch.set_num_threads(1)
                    m = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 16))
                    m.load_state_dict(torch.load(weights, weights_only=True))
                    m.eval()
                    out = []
                    for part in range(4):
                        ids, x = rows_of(f"{input}/part-{part}.parquet", "features", 256)
                        for start in range(0, len(ids), 512):
                            with torch.inference_mode():
                                out.append(m(torch.from_numpy(x[start:start + 512].copy())).numpy())
                    return np.concatenate(out)

                want = torch_scores(%1$s, %2$s)
                got_ids, got = rows_of(%3$s, "scores", 16)
                rows_ids, rows = rows_of(%4$s, "scores", 16)
                report = {"ids": got_ids == list(range(6000)), "rows ids": rows_ids == got_ids,
                          "torch": bool(np.array_equal(got.view(np.int32), want.view(np.int32))),
                          "row route": bool(np.array_equal(got.view(np.int32), rows.view(np.int32))),
                          "files": sorted(f for f in os.listdir(%3$s)),
                          "dictionary": any("DICTIONARY" in e for f in os.listdir(%3$s) if f.endswith(".parquet")
                                            for e in pq.ParquetFile(f"{%3$s}/{f}").metadata.row_group(0).column(1).encodings)}
                """, Sparks.pyLiteral(input), Sparks.pyLiteral(weights), Sparks.pyLiteral(dir.resolve("arrow")), Sparks.pyLiteral(dir.resolve("rows"))));
        try (PyObject report = py.getGlobal("report")) {
            @SuppressWarnings("unchecked")
            Map<String, Object> r = (Map<String, Object>) report.toJava();
            assertThat(r).containsEntry("ids", true).containsEntry("rows ids", true)
                    .containsEntry("torch", true).containsEntry("row route", true);
            @SuppressWarnings("unchecked")
            List<String> files = (List<String>) r.get("files");
            assertThat(files).hasSize(5).contains("_SUCCESS").allMatch(f -> f.equals("_SUCCESS")
                    || f.matches("part-0000[0-3]-[0-9a-f-]{36}\\.parquet"));
            assertThat(r.get("dictionary")).as("dictionary pages: Arrow Java's writer has them, pyarrow's none")
                    .isEqualTo(writer.equals("arrow"));
        }
        // Spark reads it as the row route's output
        List<Row> viaSpark = spark.read().parquet(dir.resolve("arrow").toString()).orderBy("id").collectAsList();
        List<Row> rowRoute = spark.read().parquet(dir.resolve("rows").toString()).orderBy("id").collectAsList();
        assertThat(viaSpark).isEqualTo(rowRoute);
        Sparks.assertEveryArrowBufferReleased(py);
    }

    @Test
    void every_numeric_column_type_goes_through_torch_and_back_with_its_exact_values(@TempDir Path dir) {
        Path input = dir.resolve("in");
        py.exec(String.format("""
                os.makedirs(%1$s)
                types = {"tinyint": np.int8, "smallint": np.int16, "int": np.int32, "bigint": np.int64,
                         "float": np.float32, "double": np.float64}
                for part in range(2):
                    cols = {"id": pa.array(np.arange(part * 40, part * 40 + 40, dtype=np.int64))}
                    for name, t in types.items():
                        v = (np.arange(part * 120, part * 120 + 120) * 7 - 300).astype(t)
                        cols["s_" + name] = pa.array(v[:40])
                        cols["a_" + name] = pa.ListArray.from_arrays(pa.array(np.arange(0, 121, 3, dtype=np.int32)),
                                                                     pa.array(v))
                    pq.write_table(pa.table(cols), f"{%1$s}/part-{part}.parquet", row_group_size=15)
                """, Sparks.pyLiteral(input)));
        List<String> names = List.of("tinyint", "smallint", "int", "bigint", "float", "double");
        List<DataType> types = List.of(DataTypes.ByteType, DataTypes.ShortType, DataTypes.IntegerType,
                DataTypes.LongType, DataTypes.FloatType, DataTypes.DoubleType);
        BatchInference.Builder b = BatchInference.builder().passThrough("id")
                .model(ExecutorModel.fromSource("identity", IDENTITY, "load")).batchSize(7);
        for (int i = 0; i < names.size(); i++) {
            b.input("s_" + names.get(i)).output("s_" + names.get(i), types.get(i));
            b.input("a_" + names.get(i), 3).output("a_" + names.get(i), types.get(i), 3);
        }
        BatchInference identity = b.build();

        assertThat(identity.transformParquet(spark, input.toString(), dir.resolve("out").toString())).isEqualTo(80);

        List<Row> in = spark.read().parquet(input.toString()).orderBy("id").collectAsList();
        List<Row> out = spark.read().parquet(dir.resolve("out").toString()).orderBy("id").collectAsList();
        assertThat(out).hasSize(80);
        for (int r = 0; r < 80; r++) {
            assertThat(out.get(r).getLong(0)).isEqualTo(in.get(r).getLong(0));
            for (String n : names) {
                assertThat(out.get(r).<Object>getAs("s_" + n)).isEqualTo(in.get(r).getAs("s_" + n));
                assertThat(out.get(r).getList(out.get(r).fieldIndex("a_" + n)))
                        .isEqualTo(in.get(r).getList(in.get(r).fieldIndex("a_" + n)));
            }
        }
    }

    @Test
    void files_written_by_pyarrow_in_every_layout_are_read_right(@TempDir Path dir) {
        Path input = dir.resolve("in");
        py.exec(String.format("""
                os.makedirs(%1$s)
                t = features_table(0, 1000, 8, 11)
                layouts = [dict(compression="snappy", use_dictionary=True, row_group_size=300),
                           dict(compression="zstd", use_dictionary=False, row_group_size=128,
                                data_page_version="2.0"),
                           dict(compression="none", use_dictionary=True, data_page_size=1024),
                           dict(compression="gzip", use_dictionary=False, row_group_size=999)]
                for i, kw in enumerate(layouts):
                    part = t.slice(i * 200, 200)
                    part = part.set_column(0, "id", pa.array(np.arange(i * 200, i * 200 + 200, dtype=np.int64)))
                    pq.write_table(part, f"{%1$s}/a-{i}.parquet", **kw)
                # stored as a fixed-size list, and as a large list
                fixed = pa.FixedSizeListArray.from_arrays(t.column("features").combine_chunks().values.slice(800 * 8, 100 * 8), 8)
                pq.write_table(pa.table({"id": pa.array(np.arange(800, 900, dtype=np.int64)), "features": fixed}),
                               f"{%1$s}/b-fixed.parquet", store_schema=True)
                large = t.slice(900, 100).cast(pa.schema([("id", pa.int64()), ("features", pa.large_list(pa.float32()))]))
                pq.write_table(large.set_column(0, "id", pa.array(np.arange(900, 1000, dtype=np.int64))),
                               f"{%1$s}/c-large.parquet", store_schema=True)
                want_ids = list(range(1000))
                want = t.column("features").combine_chunks().values.to_numpy().reshape(-1, 8)
                """, Sparks.pyLiteral(input)));
        BatchInference identity = BatchInference.builder().input("features", 8).passThrough("id").batchSize(64)
                .model(ExecutorModel.fromSource("identity", IDENTITY, "load")).output("y", DataTypes.FloatType, 8).build();

        assertThat(identity.transformParquet(spark, input.toString(), dir.resolve("out").toString())).isEqualTo(1000);

        py.exec(String.format("""
                ids, got = rows_of(%1$s, "y", 8)
                same = ids == want_ids and bool(np.array_equal(got.view(np.int32), want.view(np.int32)))
                """, Sparks.pyLiteral(dir.resolve("out"))));
        try (PyObject same = py.getGlobal("same")) {
            assertThat(same.toJava()).isEqualTo(true);
        }
    }

    @Test
    void a_null_a_short_array_a_null_element_and_a_null_number_fail_naming_the_file_and_the_rows_key(@TempDir Path dir)
            throws InterruptedException, IOException {
        String[] cases = {
            "pa.array([[1, 2, 3], None, [1, 2, 3]], pa.list_(pa.float32()))",
            "pa.array([[1, 2, 3], [1, 2, 3], [1, 2]], pa.list_(pa.float32()))",
            "pa.array([[1, 2, 3], [1, 2, 3, 4], [1, 2, 3]], pa.list_(pa.float32()))",
            "pa.array([[1, 2, 3], [1, None, 3], [1, 2, 3]], pa.list_(pa.float32()))",
        };
        String[] messages = {
            "column features of the row with id=11 (row 1 of file bad.parquet) is null; a tensor column cannot hold nulls",
            "column features of the row with id=12 (row 2 of file bad.parquet) holds 2 values; every row needs 3",
            "column features of the row with id=11 (row 1 of file bad.parquet) holds 4 values; every row needs 3",
            "column features of the row with id=11 (row 1 of file bad.parquet) holds a null at index 1",
        };
        BatchInference identity = BatchInference.builder().input("features", 3).passThrough("id")
                .model(ExecutorModel.fromSource("identity", IDENTITY, "load")).output("y", DataTypes.FloatType, 3).build();
        for (int i = 0; i < cases.length; i++) {
            Path input = dir.resolve("in" + i);
            Path output = dir.resolve("out" + i);
            py.exec(String.format("""
                    os.makedirs(%1$s)
                    pq.write_table(features_table(0, 10, 3, 1), %1$s + "/a-good.parquet")
                    pq.write_table(pa.table({"id": pa.array([10, 11, 12], pa.int64()), "features": %2$s}),
                                   %1$s + "/bad.parquet")
                    """, Sparks.pyLiteral(input), cases[i]));
            assertThatThrownBy(() -> identity.transformParquet(spark, input.toString(), output.toString()))
                    .isInstanceOf(SparkException.class).hasMessageContaining(messages[i]);
            try (Stream<Path> left = Files.walk(output)) {
                assertThat(left.map(p -> output.relativize(p).toString()).filter(p -> !p.isEmpty()).toList())
                        .as("a failed job leaves no part file and no temporary directory").isEmpty();
            }
        }
        Path input = dir.resolve("null-id");
        py.exec(String.format("""
                os.makedirs(%1$s)
                pq.write_table(pa.table({"id": pa.array([10, None], pa.int64()), "x": pa.array([1.0, 2.0])}),
                               %1$s + "/n.parquet")
                """, Sparks.pyLiteral(input)));
        BatchInference byKey = BatchInference.builder().input("x").passThrough("id").key("x")
                .model(ExecutorModel.fromSource("identity", IDENTITY, "load")).output("y", DataTypes.DoubleType).build();
        assertThatThrownBy(() -> byKey.transformParquet(spark, input.toString(), dir.resolve("null-out").toString()))
                .isInstanceOf(SparkException.class)
                .hasMessageContaining("column id of the row with x=2.0 (row 1 of file n.parquet) is null");
        Sparks.assertEveryArrowBufferReleased(py);
    }

    @Test
    void a_key_of_a_type_no_tensor_holds_still_names_the_refused_row(@TempDir Path dir) {
        Path input = dir.resolve("in");
        py.exec(String.format("""
                os.makedirs(%1$s)
                pq.write_table(pa.table({"k": pa.array([6, 7], pa.uint32()),
                                         "features": pa.array([[1, 2, 3], [1, 2]], pa.list_(pa.float32()))}),
                               %1$s + "/bad.parquet")
                """, Sparks.pyLiteral(input)));
        BatchInference identity = BatchInference.builder().input("features", 3).key("k")
                .model(ExecutorModel.fromSource("identity", IDENTITY, "load")).output("y", DataTypes.FloatType, 3).build();

        assertThatThrownBy(() -> identity.transformParquet(spark, input.toString(), dir.resolve("out").toString()))
                .isInstanceOf(SparkException.class)
                .hasMessageContaining("column features of the row with k=7 (row 1 of file bad.parquet) holds 2 values");
    }

    @Test
    void a_file_of_another_schema_fails_naming_the_file_and_the_column(@TempDir Path dir) {
        Path input = dir.resolve("in");
        py.exec(String.format("""
                os.makedirs(%1$s)
                pq.write_table(features_table(0, 10, 3, 1), %1$s + "/a.parquet")
                pq.write_table(pa.table({"id": pa.array([10], pa.int64()),
                                         "features": pa.array([[1, 2, 3]], pa.list_(pa.float64()))}), %1$s + "/b.parquet")
                pq.write_table(pa.table({"id": pa.array([11], pa.int64())}), %1$s + "/c.parquet")
                """, Sparks.pyLiteral(input)));
        BatchInference identity = BatchInference.builder().input("features", 3).passThrough("id")
                .model(ExecutorModel.fromSource("identity", IDENTITY, "load")).output("y", DataTypes.FloatType, 3).build();

        assertThatThrownBy(() -> identity.transformParquet(spark, input.toString(), dir.resolve("out").toString()))
                .isInstanceOf(SparkException.class)
                .hasMessageFindingMatch("file (b\\.parquet: column features is List<FloatingPoint\\(DOUBLE\\)>|c\\.parquet has no column features)");
    }

    @Test
    void an_empty_file_and_a_dataset_of_empty_files_give_an_empty_output_that_spark_and_pyarrow_read(@TempDir Path dir)
            throws IOException {
        Path input = dir.resolve("in");
        py.exec(String.format("""
                os.makedirs(%1$s)
                pq.write_table(features_table(0, 0, 3, 1), %1$s + "/empty.parquet")
                pq.write_table(features_table(0, 0, 3, 1), %1$s + "/empty-too.parquet")
                os.makedirs(%1$s + "-mixed")
                pq.write_table(features_table(0, 0, 3, 1), %1$s + "-mixed/a-empty.parquet")
                pq.write_table(features_table(0, 5, 3, 1), %1$s + "-mixed/b.parquet")
                """, Sparks.pyLiteral(input)));
        BatchInference identity = BatchInference.builder().input("features", 3).passThrough("id")
                .model(ExecutorModel.fromSource("identity", IDENTITY, "load")).output("y", DataTypes.FloatType, 3).build();

        assertThat(identity.transformParquet(spark, input.toString(), dir.resolve("out").toString())).isZero();
        assertThat(identity.transformParquet(spark, input + "-mixed", dir.resolve("out-mixed").toString())).isEqualTo(5);

        assertThat(spark.read().parquet(dir.resolve("out").toString()).count()).isZero();
        assertThat(spark.read().parquet(dir.resolve("out").toString()).schema().fieldNames()).containsExactly("id", "y");
        try (Stream<Path> files = Files.list(dir.resolve("out-mixed"))) {
            assertThat(files.map(p -> p.getFileName().toString()).filter(f -> f.endsWith(".parquet")).toList())
                    .as("no file for the empty input file").hasSize(1);
        }
        py.exec(String.format("""
                empty = pq.read_table(%1$s)
                empty_report = [empty.num_rows, empty.column_names]
                """, Sparks.pyLiteral(dir.resolve("out"))));
        try (PyObject report = py.getGlobal("empty_report")) {
            assertThat(report.toJava()).isEqualTo(List.of(0L, List.of("id", "y")));
        }
    }

    @Test
    void a_model_output_of_another_shape_fails_naming_the_output(@TempDir Path dir) {
        Path input = dir.resolve("in");
        py.exec(String.format("""
                os.makedirs(%1$s)
                pq.write_table(features_table(0, 10, 3, 1), %1$s + "/a.parquet")
                """, Sparks.pyLiteral(input)));
        BatchInference wrong = BatchInference.builder().input("features", 3).passThrough("id")
                .model(ExecutorModel.fromSource("identity", IDENTITY, "load")).output("y", DataTypes.FloatType, 4).build();

        assertThatThrownBy(() -> wrong.transformParquet(spark, input.toString(), dir.resolve("out").toString()))
                .isInstanceOf(SparkException.class)
                .hasMessageContaining("model identity: output y is float32 [10, 3] for a batch of 10 rows");
    }

    @Test
    void an_output_that_is_not_empty_a_boolean_column_and_another_filesystem_are_refused_before_any_job(
            @TempDir Path dir) throws IOException {
        Path input = dir.resolve("in");
        py.exec(String.format("""
                os.makedirs(%1$s)
                pq.write_table(pa.table({"id": pa.array([1], pa.int64()), "b": pa.array([True])}), %1$s + "/a.parquet")
                """, Sparks.pyLiteral(input)));
        Files.createDirectories(dir.resolve("out"));
        Files.writeString(dir.resolve("out/x"), "x");
        BatchInference identity = BatchInference.builder().input("id").passThrough("id")
                .model(ExecutorModel.fromSource("identity", IDENTITY, "load")).output("y", DataTypes.LongType).build();
        BatchInference bools = BatchInference.builder().input("b").passThrough("id")
                .model(ExecutorModel.fromSource("identity", IDENTITY, "load")).output("y", DataTypes.BooleanType).build();

        assertThatThrownBy(() -> identity.transformParquet(spark, input.toString(), dir.resolve("out").toString()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("exists and is not empty");
        assertThatThrownBy(() -> bools.transformParquet(spark, input.toString(), dir.resolve("out2").toString()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("column b: the Parquet route reads no boolean columns");
        assertThatThrownBy(() -> identity.transformParquet(spark, "hdfs://nn/in", dir.resolve("out3").toString()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is not a local path");
        assertThatThrownBy(() -> identity.transformParquet(spark, dir.resolve("none").toString(),
                dir.resolve("out4").toString()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is neither a Parquet file nor a directory");
    }
}
