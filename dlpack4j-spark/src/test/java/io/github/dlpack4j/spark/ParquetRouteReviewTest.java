package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

import org.apache.spark.SparkException;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Parquet route's edges that a review tried: outputs the model makes in unusual memory,
 * row order across many row groups, refusals as the row route's, files Arrow cannot read, and the
 * memory the tasks hold after each way a job can fail.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ParquetRouteReviewTest {
    private static SparkSession spark;
    private static Python py;

    @BeforeAll
    static void startSpark() {
        spark = Sparks.local();
        py = Sparks.parquetPython();
        py.exec("""
                def review_same(input, output, column, n):
                    i = pq.read_table(input)
                    o = pq.read_table(output)
                    xi = i.column("features").combine_chunks().values.to_numpy().reshape(-1, n)
                    xo = o.column(column).combine_chunks().values.to_numpy().reshape(-1, n)
                    return (i.column("id").to_pylist() == o.column("id").to_pylist()
                            and bool(np.array_equal(xi.view(np.int32), xo.view(np.int32))))
                """);
    }

    /** Every test's Arrow memory is back once it ends, whatever it checked. */
    @AfterEach
    void everyArrowBufferIsReleased() throws InterruptedException {
        Sparks.assertEveryArrowBufferReleased(py);
    }


    private static boolean truth(String expr) {
        try (PyObject o = py.eval(expr)) {
            return (Boolean) o.toJava();
        }
    }

    private static BatchInference model(String name, String source, int n, int batch) {
        return BatchInference.builder().input("features", n).passThrough("id").batchSize(batch)
                .model(ExecutorModel.fromSource(name, source, "load")).output("y", DataTypes.FloatType, n).build();
    }

    /** The only parquet file under {@code dir}. */
    private static Path onlyPart(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            List<Path> parts = s.filter(p -> p.toString().endsWith(".parquet")).toList();
            assertThat(parts).hasSize(1);
            return parts.getFirst();
        }
    }

    @Test
    void outputs_that_are_strided_views_or_read_only_are_written_with_their_values(@TempDir Path dir)
            throws IOException {
        Path input = dir.resolve("in");
        Sparks.writeOneFile(py, input, 300, 4, 3);
        String[] bodies = {
            "torch.from_dlpack(x).t().contiguous().t()", // column-major: strides [1, rows]
            "torch.stack([torch.from_dlpack(x), torch.from_dlpack(x)], 2)[:, :, 0]", // strides [8, 2]
            "torch.from_dlpack(x).repeat(1, 2)[:, :4]", // strides [8, 1]
        };
        for (int i = 0; i < bodies.length; i++) {
            String source = "import torch\n\ndef load():\n    return lambda x: " + bodies[i] + "\n";
            Path out = dir.resolve("out" + i);
            assertThat(model("strided" + i, source, 4, 64).transformParquet(spark, input.toString(), out.toString()))
                    .isEqualTo(300);
            assertThat(truth("review_same(" + Sparks.pyLiteral(input.resolve("a.parquet")) + ", " + Sparks.pyLiteral(onlyPart(out)) + ", 'y', 4)"))
                    .as(bodies[i]).isTrue();
        }
    }

    @Test
    void a_model_that_returns_a_read_only_array_has_it_written(@TempDir Path dir) throws IOException {
        Path input = dir.resolve("in");
        Sparks.writeOneFile(py, input, 100, 4, 3);
        String source = """
                import numpy as np

                def load():
                    def f(x):
                        a = np.from_dlpack(x).copy()
                        a.flags.writeable = False
                        return a
                    return f
                """;
        Path out = dir.resolve("out");
        assertThat(model("readonly", source, 4, 32).transformParquet(spark, input.toString(), out.toString()))
                .isEqualTo(100);
        assertThat(truth("review_same(" + Sparks.pyLiteral(input.resolve("a.parquet")) + ", " + Sparks.pyLiteral(onlyPart(out)) + ", 'y', 4)")).isTrue();
    }

    @Test
    void a_model_that_writes_every_batch_into_the_same_output_buffer_gets_each_batchs_values_written(@TempDir Path dir)
            throws IOException {
        Path input = dir.resolve("in");
        Sparks.writeOneFile(py, input, 20000, 256, 5);
        String source = """
                import torch

                def load():
                    buf = torch.empty(256, 256)
                    def f(x):
                        x = torch.from_dlpack(x)
                        out = buf[:x.shape[0]]
                        out.copy_(x)
                        return out
                    return f
                """;
        Path out = dir.resolve("out");
        assertThat(model("reuses", source, 256, 256).transformParquet(spark, input.toString(), out.toString()))
                .isEqualTo(20000);
        assertThat(truth("review_same(" + Sparks.pyLiteral(input.resolve("a.parquet")) + ", " + Sparks.pyLiteral(onlyPart(out)) + ", 'y', 256)"))
                .as("the values of each batch, not a later batch's").isTrue();
    }

    @Test
    void the_model_gets_batches_of_the_batch_size_in_order_while_a_read_holds_many_of_them(@TempDir Path dir)
            throws IOException {
        Path input = dir.resolve("in");
        Sparks.writeOneFile(py, input, 1000, 4, 11);
        // each row's output: its own first feature, its batch's rows, its place in the batch, the call's number
        String source = """
                import torch

                def load():
                    calls = [0]
                    def f(x):
                        x = torch.from_dlpack(x)
                        calls[0] += 1
                        n = x.shape[0]
                        return torch.stack([x[:, 0], torch.full((n,), float(n)), torch.arange(n, dtype=torch.float32),
                                            torch.full((n,), float(calls[0]))], dim=1)
                    return f
                """;
        Path out = dir.resolve("out");
        assertThat(model("sizes", source, 4, 64).transformParquet(spark, input.toString(), out.toString()))
                .isEqualTo(1000);
        assertThat(ParquetTask.readRows(List.of(TensorColumn.array("features", DataTypes.FloatType, 4)), 64))
                .as("one read holds every row").isEqualTo(16_384);
        assertThat(truth(String.format("""
                (lambda i, o: bool(np.array_equal(o[:, 0], i[:, 0]))
                    and o[:, 1].tolist() == [64.0] * 960 + [40.0] * 40
                    and o[:, 2].tolist() == [float(r %% 64) for r in range(1000)]
                    and len(set(o[:, 3].tolist())) == 16 and bool(np.all(np.diff(o[:, 3]) >= 0)))(
                    pq.read_table(%s).column("features").combine_chunks().values.to_numpy().reshape(-1, 4),
                    pq.read_table(%s).column("y").combine_chunks().values.to_numpy().reshape(-1, 4))
                """, Sparks.pyLiteral(input.resolve("a.parquet")), Sparks.pyLiteral(onlyPart(out)))))
                .as("each row's own value, from a call of 64 rows (the last 40), in file order").isTrue();
    }

    @Test
    void a_read_holds_whole_model_batches_up_to_16384_rows_or_32_mib_of_input_and_at_least_one_batch() {
        List<TensorColumn> mlp = List.of(TensorColumn.array("features", DataTypes.FloatType, 256),
                TensorColumn.scalar("id", DataTypes.LongType));
        assertThat(ParquetTask.readRows(mlp, 1024)).isEqualTo(16_384);
        assertThat(ParquetTask.readRows(mlp, 1000)).isEqualTo(16_000);
        assertThat(ParquetTask.readRows(mlp, 50_000)).isEqualTo(50_000);
        List<TensorColumn> images = List.of(TensorColumn.array("pixels", DataTypes.FloatType, 3 * 224 * 224));
        assertThat(ParquetTask.readRows(images, 8)).as("32 MiB of 588 KiB rows: 55 rows, 6 batches").isEqualTo(48);
        assertThat(ParquetTask.readRows(images, 64)).as("one batch, over 32 MiB").isEqualTo(64);
    }

    @Test
    void a_file_of_many_row_groups_and_shuffled_ids_keeps_its_rows_once_each_in_their_order(@TempDir Path dir)
            throws IOException {
        Path input = dir.resolve("in");
        py.exec(String.format("""
                os.makedirs(%1$s)
                ids = np.random.default_rng(9).permutation(5000)
                pq.write_table(ids_table(ids, 8, 7), %1$s + "/a.parquet", row_group_size=37, use_dictionary=True)
                """, Sparks.pyLiteral(input)));
        // a new tensor, and the input itself: the output vector then views the scanner's batch
        String[] bodies = {"torch.from_dlpack(x) * 1", "torch.from_dlpack(x)"};
        for (int i = 0; i < bodies.length; i++) {
            String source = "import torch\n\ndef load():\n    return lambda x: " + bodies[i] + "\n";
            Path out = dir.resolve("out" + i);
            assertThat(model("order" + i, source, 8, 50).transformParquet(spark, input.toString(), out.toString()))
                    .isEqualTo(5000);
            assertThat(truth("review_same(" + Sparks.pyLiteral(input.resolve("a.parquet")) + ", " + Sparks.pyLiteral(onlyPart(out)) + ", 'y', 8)"))
                    .as(bodies[i]).isTrue();
        }
    }

    @Test
    void the_first_refused_row_and_column_and_the_words_are_the_row_routes(@TempDir Path dir) throws Exception {
        // a: a null element at row 3; b: a short array at row 2, and a null at row 3.
        // c: both refused at row 1, a before b.
        String[][] cases = {
            {"pa.array([[1, 2], [1, 2], [1, 2], [1, None], [1, 2]], pa.list_(pa.float32()))",
             "pa.array([[1, 2], [1, 2], [1], None, [1, 2]], pa.list_(pa.float32()))"},
            {"pa.array([[1, 2], [1, None], [1, 2], [1, 2], [1, 2]], pa.list_(pa.float32()))",
             "pa.array([[1, 2], None, [1, 2], [1, 2], [1, 2]], pa.list_(pa.float32()))"},
            {"pa.array([[1, 2], [1, 2], [1, 2], [1, 2], [1, 2, 3]], pa.list_(pa.float32()))",
             "pa.array([[1, 2], [1, 2], [1, 2], [1, 2], None], pa.list_(pa.float32()))"},
        };
        BatchInference two = BatchInference.builder().input("a", 2).input("b", 2).passThrough("id").batchSize(2)
                .model(ExecutorModel.fromSource("two", "import torch\n\ndef load():\n    return lambda a, b: torch.from_dlpack(a) + torch.from_dlpack(b)\n", "load"))
                .output("y", DataTypes.FloatType, 2).build();
        for (int i = 0; i < cases.length; i++) {
            Path input = dir.resolve("in" + i);
            py.exec(String.format("""
                    os.makedirs(%1$s)
                    pq.write_table(pa.table({"id": pa.array(range(100, 105), pa.int64()), "a": %2$s, "b": %3$s}),
                                   %1$s + "/bad.parquet")
                    """, Sparks.pyLiteral(input), cases[i][0], cases[i][1]));
            String rowRoute = null;
            try {
                two.transform(spark.read().parquet(input.toString())).write().parquet(dir.resolve("rows" + i).toString());
            } catch (Exception e) {
                rowRoute = rootMessage(e);
            }
            assertThat(rowRoute).as("the row route refuses case " + i).isNotNull();
            String parquetRoute = null;
            try {
                two.transformParquet(spark, input.toString(), dir.resolve("arrow" + i).toString());
            } catch (Exception e) {
                parquetRoute = rootMessage(e);
            }
            assertThat(parquetRoute).as("the Parquet route refuses case " + i).isNotNull();
            assertThat(parquetRoute.replaceAll(" of file bad\\.parquet", ""))
                    .as("case " + i).isEqualTo(rowRoute.replaceAll(" of partition \\d+", ""));
        }
        Sparks.assertEveryArrowBufferReleased(py);
    }

    @Test
    void a_model_failing_on_a_batch_before_a_refused_row_of_the_same_read_fails_the_job_as_on_the_row_route(
            @TempDir Path dir) throws Exception {
        Path input = dir.resolve("in");
        // row 5 holds 999, which the model fails on; row 50, in a later model batch of the same read, a null
        py.exec(String.format("""
                os.makedirs(%1$s)
                rows = [[float(r), 1.0] for r in range(100)]
                rows[5] = [999.0, 1.0]
                rows[50] = [1.0, None]
                pq.write_table(pa.table({"id": pa.array(range(100), pa.int64()),
                                         "features": pa.array(rows, pa.list_(pa.float32()))}), %1$s + "/a.parquet")
                """, Sparks.pyLiteral(input)));
        String[][] models = {
            {"raises999", "if bool((x == 999).any()):\n            raise ValueError('the model fails on 999')\n        return x",
             "the model fails on 999"},
            {"shape999", "return x[:, :1] if bool((x == 999).any()) else x", "output y is float32 [8, 1]"},
        };
        for (String[] m : models) {
            String source = "import torch\n\ndef load():\n    def f(x):\n        x = torch.from_dlpack(x) * 1\n        "
                    + m[1] + "\n    return f\n";
            BatchInference inference = BatchInference.builder().input("features", 2).passThrough("id").batchSize(8)
                    .model(ExecutorModel.fromSource(m[0], source, "load")).output("y", DataTypes.FloatType, 2).build();
            assertThatThrownBy(() -> inference.transform(spark.read().parquet(input.toString()))
                    .write().parquet(dir.resolve("rows-" + m[0]).toString()))
                    .as("the row route, " + m[0]).hasStackTraceContaining(m[2]);
            assertThatThrownBy(() -> inference.transformParquet(spark, input.toString(), dir.resolve("arrow-" + m[0]).toString()))
                    .as("the Parquet route, " + m[0]).hasStackTraceContaining(m[2])
                    .satisfies(e -> assertThat(rootMessage(e)).doesNotContain("holds a null"));
        }
        Sparks.assertEveryArrowBufferReleased(py);
    }

    @Test
    void a_refused_row_is_named_by_a_dictionary_encoded_string_key_as_the_row_route_names_it(@TempDir Path dir) {
        Path input = dir.resolve("in");
        py.exec(String.format("""
                os.makedirs(%1$s)
                t = pa.table({"name": pa.array(["a", "b", "c", "d"]).dictionary_encode(),
                              "features": pa.array([[1, 2], [1, 2], None, [1, 2]], pa.list_(pa.float32()))})
                pq.write_table(t, %1$s + "/a.parquet")
                """, Sparks.pyLiteral(input)));
        BatchInference byName = BatchInference.builder().input("features", 2).key("name").batchSize(10)
                .model(ExecutorModel.fromSource("identity", "import torch\n\ndef load():\n    return lambda x: torch.from_dlpack(x)\n", "load"))
                .output("y", DataTypes.FloatType, 2).build();
        assertThatThrownBy(() -> byName.transform(spark.read().parquet(input.toString())).collectAsList())
                .hasMessageContaining("column features of the row with name=c (row 2 of partition 0)");
        assertThatThrownBy(() -> byName.transformParquet(spark, input.toString(), dir.resolve("out").toString()))
                .hasMessageContaining("column features of the row with name=c (row 2 of file a.parquet)");
    }

    @Test
    void paths_with_spaces_percent_signs_and_hashes_are_read_and_written(@TempDir Path dir) throws IOException {
        Path input = dir.resolve("in put %41 #1");
        py.exec(String.format("""
                os.makedirs(%1$s)
                pq.write_table(ids_table(range(50), 4, 3), %1$s + "/a b%%20#.parquet")
                """, Sparks.pyLiteral(input)));
        Path out = dir.resolve("out put %41 #1");
        String identity = "import torch\n\ndef load():\n    return lambda x: torch.from_dlpack(x) * 1\n";
        assertThat(model("paths", identity, 4, 16).transformParquet(spark, input.toString(), out.toString())).isEqualTo(50);
        assertThat(truth("review_same(" + Sparks.pyLiteral(input.resolve("a b%20#.parquet")) + ", " + Sparks.pyLiteral(onlyPart(out)) + ", 'y', 4)"))
                .isTrue();
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null) {
            t = t.getCause();
        }
        String m = t.getMessage();
        return m.lines().filter(l -> l.startsWith("column ")).findFirst().orElse(m);
    }

    @Test
    void a_file_that_is_not_parquet_and_a_truncated_file_fail_the_job_leaving_nothing(@TempDir Path dir)
            throws Exception {
        Path junk = dir.resolve("junk");
        Path truncated = dir.resolve("truncated");
        py.exec(String.format("""
                os.makedirs(%1$s)
                pq.write_table(ids_table(range(3000), 64, 1), %1$s + "/a.parquet", row_group_size=500)
                with open(%1$s + "/b.parquet", "w") as f:
                    f.write("not parquet at all " * 100)
                os.makedirs(%2$s)
                pq.write_table(ids_table(range(3000), 64, 1), %2$s + "/a.parquet", row_group_size=500)
                pq.write_table(ids_table(range(3000), 64, 1), %2$s + "/b.parquet", row_group_size=500)
                data = open(%2$s + "/b.parquet", "rb").read()
                # the footer kept, a row group's pages overwritten: the reader fails mid-file
                mid = len(data) // 2
                open(%2$s + "/b.parquet", "wb").write(data[:mid] + b"\\xff" * 4096 + data[mid + 4096:])
                """, Sparks.pyLiteral(junk), Sparks.pyLiteral(truncated)));
        BatchInference identity = model("identity",
                "import torch\n\ndef load():\n    return lambda x: torch.from_dlpack(x) * 1\n", 64, 100);
        for (Path input : List.of(junk, truncated)) {
            Path out = dir.resolve("out-" + input.getFileName());
            assertThatThrownBy(() -> identity.transformParquet(spark, input.toString(), out.toString()))
                    .isInstanceOf(Exception.class);
            try (Stream<Path> left = Files.walk(out)) {
                assertThat(left.map(p -> out.relativize(p).toString()).filter(p -> !p.isEmpty()).toList()).isEmpty();
            }
        }
        Sparks.assertEveryArrowBufferReleased(py);
    }

    @Test
    void a_refusal_late_in_a_file_that_a_fast_model_scored_ahead_of_the_writer_leaves_no_arrow_memory(@TempDir Path dir) {
        Path input = dir.resolve("in");
        py.exec(String.format("""
                os.makedirs(%1$s)
                t = ids_table(range(100000), 256, 4)
                f = t.column("features").combine_chunks()
                valid = np.ones(100000, dtype=bool)
                valid[99000] = False
                f = pa.ListArray.from_arrays(f.offsets, f.values, mask=pa.array(~valid))
                pq.write_table(t.set_column(1, "features", f), %1$s + "/a.parquet", row_group_size=20000)
                """, Sparks.pyLiteral(input)));
        String identity = "import torch\n\ndef load():\n    return lambda x: torch.from_dlpack(x)\n";
        assertThatThrownBy(() -> model("fast", identity, 256, 4096).transformParquet(spark, input.toString(),
                dir.resolve("out").toString()))
                .isInstanceOf(SparkException.class).hasMessageContaining("the row with id=99000");
        // the @AfterEach check: the batches Arrow's writer had read ahead are released too
    }

    @Test
    void a_model_that_raises_on_a_later_batch_fails_the_job_and_leaves_no_arrow_memory(@TempDir Path dir)
            throws Exception {
        Path input = dir.resolve("in");
        py.exec(String.format("""
                os.makedirs(%1$s)
                for p in range(2):
                    pq.write_table(ids_table(range(p * 3000, p * 3000 + 3000), 64, p), %1$s + f"/p{p}.parquet")
                """, Sparks.pyLiteral(input)));
        String source = """
                import torch

                def load():
                    calls = [0]
                    def f(x):
                        calls[0] += 1
                        if calls[0] == 7:
                            raise ValueError("the seventh batch")
                        return torch.from_dlpack(x) * 2
                    return f
                """;
        Path out = dir.resolve("out");
        assertThatThrownBy(() -> model("raises", source, 64, 100).transformParquet(spark, input.toString(), out.toString()))
                .isInstanceOf(SparkException.class).hasMessageContaining("the seventh batch");
        Sparks.assertEveryArrowBufferReleased(py);
    }

    @Test
    void a_job_cancelled_with_interrupts_while_it_scores_leaves_no_arrow_memory_and_no_file(@TempDir Path dir)
            throws Exception {
        Path input = dir.resolve("in");
        py.exec(String.format("""
                os.makedirs(%1$s)
                for p in range(2):
                    pq.write_table(ids_table(range(p * 20000, p * 20000 + 20000), 256, p), %1$s + f"/p{p}.parquet")
                """, Sparks.pyLiteral(input)));
        String source = """
                import torch, time

                def load():
                    def f(x):
                        time.sleep(0.05)
                        return torch.from_dlpack(x) * 2
                    return f
                """;
        Path out = dir.resolve("out");
        BatchInference slow = model("slow", source, 256, 128);
        Throwable[] failure = new Throwable[1];
        Thread job = Thread.ofPlatform().start(() -> {
            spark.sparkContext().setLocalProperty("spark.job.interruptOnCancel", "true");
            try {
                slow.transformParquet(spark, input.toString(), out.toString());
            } catch (Throwable e) {
                failure[0] = e;
            }
        });
        Thread.sleep(3000);
        spark.sparkContext().cancelAllJobs();
        job.join(60_000);
        assertThat(job.isAlive()).isFalse();
        assertThat(failure[0]).as("the cancelled job fails").isNotNull();
        Thread.sleep(1000);
        try (Stream<Path> left = Files.walk(out)) {
            assertThat(left.map(p -> out.relativize(p).toString()).filter(p -> !p.isEmpty()).toList()).isEmpty();
        }
        Sparks.assertEveryArrowBufferReleased(py);
    }
}
