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
 * The Parquet route's reads of many model batches ({@link ParquetTask#readRows}): each call's rows
 * land in their own place across reads that end at row-group boundaries and short last batches, for
 * float32 arrays, float64 and int64 outputs made strided, read-only or in a buffer the model keeps;
 * and a model or writer that fails on a later call or read leaves no Arrow memory and no file.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ParquetReadsReviewTest {
    private static SparkSession spark;
    private static Python py;

    @BeforeAll
    static void startSpark() {
        spark = Sparks.local();
        py = Sparks.parquetPython();
    }

    @AfterEach
    void everyArrowBufferIsReleased() throws InterruptedException {
        Sparks.assertEveryArrowBufferReleased(py);
    }

    private static boolean truth(String expr) {
        try (PyObject o = py.eval(expr)) {
            return (Boolean) o.toJava();
        }
    }

    private static Path onlyPart(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            List<Path> parts = s.filter(p -> p.toString().endsWith(".parquet")).toList();
            assertThat(parts).hasSize(1);
            return parts.getFirst();
        }
    }

    private static void assertNothingLeft(Path out) throws IOException {
        if (!Files.exists(out)) {
            return;
        }
        try (Stream<Path> left = Files.walk(out)) {
            assertThat(left.map(p -> out.relativize(p).toString()).filter(p -> !p.isEmpty()).toList()).isEmpty();
        }
    }

    @Test
    void each_calls_rows_land_in_their_place_across_reads_row_groups_and_short_batches_for_every_output_kind(
            @TempDir Path dir) throws IOException {
        Path input = dir.resolve("in");
        py.exec(String.format("""
                os.makedirs(%1$s)
                ids = np.random.default_rng(3).permutation(45000) * 7 - 100000
                pq.write_table(ids_table(ids, 4, 21), %1$s + "/a.parquet", row_group_size=20000)
                """, Sparks.pyLiteral(input)));
        // y: strided (a column of a stack); s: read-only NumPy float64; k: int64 in a buffer the model reuses;
        // n: the call's rows, to see the short batches
        String source = """
                import numpy as np, torch

                def load():
                    buf = torch.empty(768, dtype=torch.int64)
                    def f(x, i):
                        x = torch.from_dlpack(x)
                        i = torch.from_dlpack(i)
                        n = x.shape[0]
                        y = x * 2 + 1
                        s = (((x[:, 0].double() + x[:, 1]) + x[:, 2]) + x[:, 3]).numpy().copy()
                        s.flags.writeable = False
                        k = buf[:n]
                        k.copy_(i * 3)
                        return torch.stack([y, y], 2)[:, :, 0], s, k, torch.full((n,), float(n))
                    return f
                """;
        BatchInference inference = BatchInference.builder().input("features", 4).input("id").passThrough("id")
                .batchSize(768).model(ExecutorModel.fromSource("kinds", source, "load"))
                .output("y", DataTypes.FloatType, 4).output("s", DataTypes.DoubleType)
                .output("k", DataTypes.LongType).output("n", DataTypes.FloatType).build();
        assertThat(ParquetTask.readRows(List.of(TensorColumn.array("features", DataTypes.FloatType, 4),
                TensorColumn.scalar("id", DataTypes.LongType)), 768)).isEqualTo(16_128);
        Path out = dir.resolve("out");
        assertThat(inference.transformParquet(spark, input.toString(), out.toString())).isEqualTo(45000);
        // reads: 16,128 + 3,872 (to the row group's end: five calls of 768 and one of 32), twice, then 5,000
        assertThat(truth(String.format("""
                (lambda i, o: (lambda x, ids: o.column("id").to_pylist() == ids.tolist()
                    and bool(np.array_equal(o.column("y").combine_chunks().values.to_numpy().reshape(-1, 4), x * 2 + 1))
                    and bool(np.array_equal(o.column("s").to_numpy(), ((x[:, 0].astype(np.float64) + x[:, 1]) + x[:, 2]) + x[:, 3]))
                    and bool(np.array_equal(o.column("k").to_numpy(), ids * 3))
                    and o.column("n").to_pylist() == ([768.0] * 16128 + [768.0] * 3840 + [32.0] * 32) * 2
                        + [768.0] * 4608 + [392.0] * 392)(
                    i.column("features").combine_chunks().values.to_numpy().reshape(-1, 4),
                    i.column("id").to_numpy()))(pq.read_table(%s), pq.read_table(%s))
                """, Sparks.pyLiteral(input.resolve("a.parquet")), Sparks.pyLiteral(onlyPart(out)))))
                .as("every output's rows in file order, each from its own call").isTrue();
    }

    @Test
    void an_output_of_another_shape_or_dtype_on_a_later_call_of_a_read_fails_the_job_leaving_nothing(
            @TempDir Path dir) throws Exception {
        Path input = dir.resolve("in");
        Sparks.writeOneFile(py, input, 1000, 4, 1);
        String[][] cases = {{"x[:, :3]", "[64, 3]"}, {"x.double()", "float64 [64, 4]"}};
        for (int c = 0; c < cases.length; c++) {
            String source = """
                    import torch

                    def load():
                        calls = [0]
                        def f(x):
                            x = torch.from_dlpack(x) * 1
                            calls[0] += 1
                            return %s if calls[0] == 5 else x
                        return f
                    """.formatted(cases[c][0]);
            BatchInference inference = BatchInference.builder().input("features", 4).passThrough("id").batchSize(64)
                    .model(ExecutorModel.fromSource("wrong" + c, source, "load")).output("y", DataTypes.FloatType, 4).build();
            Path out = dir.resolve("out" + c);
            assertThatThrownBy(() -> inference.transformParquet(spark, input.toString(), out.toString()))
                    .isInstanceOf(SparkException.class).hasMessageContaining("output y is")
                    .hasMessageContaining(cases[c][1]);
            assertNothingLeft(out);
        }
    }

    @Test
    void a_model_that_raises_in_a_later_read_after_the_writer_took_earlier_reads_leaves_nothing(@TempDir Path dir)
            throws Exception {
        Path input = dir.resolve("in");
        Sparks.writeOneFile(py, input, 50000, 256, 2);
        String source = """
                import torch

                def load():
                    calls = [0]
                    def f(x):
                        calls[0] += 1
                        if calls[0] == 40:
                            raise ValueError("the fortieth call, in the third read")
                        return torch.from_dlpack(x)[:, :16] * 2
                    return f
                """;
        BatchInference inference = BatchInference.builder().input("features", 256).passThrough("id").batchSize(1024)
                .model(ExecutorModel.fromSource("raises40", source, "load")).output("y", DataTypes.FloatType, 16).build();
        Path out = dir.resolve("out");
        assertThatThrownBy(() -> inference.transformParquet(spark, input.toString(), out.toString()))
                .isInstanceOf(SparkException.class).hasMessageContaining("the fortieth call");
        assertNothingLeft(out);
    }

    @Test
    void a_writer_that_fails_on_a_later_read_fails_the_job_leaving_nothing(@TempDir Path dir) throws Exception {
        Path input = dir.resolve("in");
        Sparks.writeOneFile(py, input, 60000, 256, 2);
        Python python = ExecutorPython.get();
        PythonHelpers.of(python);
        python.exec("""
                import sys
                _reads_m = sys.modules['%s']
                _reads_old_put = _reads_m.ParquetOut.put
                _reads_puts = [0]
                def _reads_new_put(self, array, schema):
                    _reads_puts[0] += 1
                    if _reads_puts[0] == 2:
                        raise OSError(28, "No space left on device (reads review)")
                    _reads_old_put(self, array, schema)
                _reads_m.ParquetOut.put = _reads_new_put
                """.formatted(PythonHelpers.MODULE));
        String previous = spark.conf().get(ParquetJob.WRITER, "auto");
        spark.conf().set(ParquetJob.WRITER, "pyarrow");
        try {
            String source = "import torch\n\ndef load():\n    return lambda x: torch.from_dlpack(x)[:, :16] * 2\n";
            BatchInference inference = BatchInference.builder().input("features", 256).passThrough("id")
                    .batchSize(1024).model(ExecutorModel.fromSource("written", source, "load"))
                    .output("y", DataTypes.FloatType, 16).build();
            Path out = dir.resolve("out");
            assertThatThrownBy(() -> inference.transformParquet(spark, input.toString(), out.toString()))
                    .isInstanceOf(SparkException.class).hasMessageContaining("No space left on device (reads review)");
            assertNothingLeft(out);
        } finally {
            spark.conf().set(ParquetJob.WRITER, previous);
            python.exec("_reads_m.ParquetOut.put = _reads_old_put\n");
        }
    }
}
