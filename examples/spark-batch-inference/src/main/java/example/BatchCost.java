package example;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import io.github.dlpack4j.spark.ExecutorPython;
import io.github.dlpack4j.spark.RowBatch;
import io.github.dlpack4j.spark.RowsToTensors;
import io.github.dlpack4j.spark.TensorColumn;
import io.github.dlpack4j.spark.TensorsToRows;

import org.apache.spark.SparkConf;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * What dlpack4j costs per batch once everything is warm, apart from Spark: the first {@code batch}
 * rows of the input, read by Spark once and kept, go through what a task of the example does to
 * each batch, {@code rounds} times in one JVM (local mode), and each step is timed: the packing
 * ({@link RowsToTensors}), the model's call through dlpack4j-model's runtime as an executor makes it
 * (the batch handed to the runtime's thread and to Python, the model's output imported), the
 * writing of the output rows ({@link TensorsToRows}); and the model alone, called directly on the
 * same batch. The exchange is the runtime's call less the model alone (their medians).
 *
 * <pre>
 * BatchCost --input DIR --weights FILE [--batch N] [--rounds N]
 * </pre>
 */
public final class BatchCost {
    private BatchCost() {
    }

    public static void main(String[] args) throws IOException {
        List<String> a = Arrays.asList(args);
        String input = a.get(a.indexOf("--input") + 1);
        String weights = Path.of(a.get(a.indexOf("--weights") + 1)).toAbsolutePath().toString();
        int batch = a.contains("--batch") ? Integer.parseInt(a.get(a.indexOf("--batch") + 1)) : 1024;
        int rounds = a.contains("--rounds") ? Integer.parseInt(a.get(a.indexOf("--rounds") + 1)) : 2000;

        SparkConf conf = new SparkConf().setMaster("local[1]").setAppName("batch-cost").set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1");
        SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
        List<InternalRow> rows;
        StructType schema;
        try {
            Dataset<Row> in = spark.read().parquet(input).select("id", "features").limit(batch);
            schema = in.schema();
            rows = in.queryExecution().toRdd().toJavaRDD().map(InternalRow::copy).collect();
        } finally {
            spark.stop();
        }
        RowsToTensors packer = RowsToTensors.of(schema, List.of(TensorColumn.array("features", DataTypes.FloatType, 256),
                TensorColumn.scalar("id", DataTypes.LongType)), "id");
        TensorsToRows writer = TensorsToRows.of(List.of(TensorColumn.scalar("id", DataTypes.LongType),
                TensorColumn.array("scores", DataTypes.FloatType, 16)));
        Python py = ExecutorPython.get();
        String mlpSource = resource("mlp.py");
        long[] pack = new long[rounds];
        long[] call = new long[rounds];
        long[] model = new long[rounds];
        long[] unpack = new long[rounds];
        long check = 0;
        // The runtime as an executor builds it (one worker: this is one task thread), and the bare
        // callable of the same source, for the model's own time.
        try (PythonModel runtime = PythonModel.builder()
                .name("mlp").python(py).source(mlpSource, "load", weights, 1)
                .input("features", DataType.FLOAT32, -1, 256).output("scores", DataType.FLOAT32, -1, 16).build();
             PyObject bare = bareModel(py, mlpSource, weights)) {
            for (int r = 0; r < rounds; r++) {
                long t0 = System.nanoTime();
                RowBatch b = packer.next(rows.iterator(), batch);
                long t1 = System.nanoTime();
                Tensor scores = runtime.predict(Map.of("features", b.tensor(0))).get("scores");
                long t2 = System.nanoTime();
                var out = writer.rows(List.of(b.tensor(1), scores));
                while (out.hasNext()) {
                    check += out.next().getLong(0);
                }
                long t3 = System.nanoTime();
                scores.close();
                long t4 = System.nanoTime();
                model[r] = py.withGil(() -> { // the model alone, on the same batch
                    try (PyObject x = PythonDlpack.toPython(b.tensor(0))) {
                        long start = System.nanoTime();
                        try (PyObject y = bare.call(x)) {
                            return System.nanoTime() - start;
                        }
                    }
                });
                b.close();
                pack[r] = t1 - t0;
                call[r] = (t2 - t1) + (t4 - t3);
                unpack[r] = t3 - t2;
            }
        }
        double p = median(pack), m = median(model), e = median(call) - m, u = median(unpack);
        System.out.println(String.format(Locale.ROOT,
                "batch-cost: %d rows a batch, median of the last %d of %d rounds: pack %.0f µs, exchange %.0f µs, "
                        + "unpack %.0f µs, model %.0f µs; dlpack4j %.0f µs a batch, %.1f%% of the model (check %d)",
                rows.size(), rounds / 2, rounds, p, e, u, m, p + e + u, 100 * (p + e + u) / m, check));
    }

    /** {@return the model's callable made by {@code mlp.py}'s {@code load}, in a module of its own} */
    private static PyObject bareModel(Python py, String source, String weights) {
        try (PyObject module = SparkScore.module(py, "mlp_bare", source);
             PyObject load = module.attr("load")) {
            return load.call(weights, 1);
        }
    }

    /** {@return the median of the second half of {@code nanos}, the warm rounds, in microseconds} */
    private static double median(long[] nanos) {
        long[] warm = Arrays.copyOfRange(nanos, nanos.length / 2, nanos.length);
        Arrays.sort(warm);
        return warm[warm.length / 2] / 1e3;
    }

    private static String resource(String name) throws IOException {
        try (InputStream in = BatchCost.class.getResourceAsStream("/" + name)) {
            if (in == null) {
                throw new IOException(name + " is not on the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
