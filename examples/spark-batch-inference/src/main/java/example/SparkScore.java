package example;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.spark.BatchInference;
import io.github.dlpack4j.spark.ExecutorModel;
import io.github.dlpack4j.spark.ExecutorPython;
import io.github.dlpack4j.spark.ExecutorWarmup;
import io.github.dlpack4j.spark.InferenceMetrics;

import org.apache.spark.SparkConf;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * Batch inference on Spark: reads Parquet ({@code id} long, {@code features} array&lt;float&gt; of
 * 256), scores the {@code mlp} model in the executors' embedded Python, writes Parquet ({@code id},
 * {@code scores} array&lt;float&gt; of 16), and prints one summary line.
 *
 * <pre>
 * SparkScore --master local[N]|spark://HOST:PORT [--executors N] --input DIR --output DIR [--route arrow|rows]
 *            [--weights FILE] [--batch N] [--repeat N] [--python EXE] [--no-model] [--conf KEY=VALUE]...
 * SparkScore --jvm-options      the JVM options this driver needs, one per line
 * </pre>
 *
 * ({@code scripts/spark-score --master cluster} starts the standalone Master and Worker that a
 * {@code spark://} master names.) {@code --route arrow} (the default) reads and writes the Parquet
 * with Arrow's C++ inside the tasks ({@link BatchInference#transformParquet}); {@code --route rows}
 * with Spark's own reader and writer, the model in between ({@link BatchInference#transform}).
 * {@code --no-model} runs the job without the model, its scores the first 16 features: what Spark's
 * reading and writing cost alone ({@code scripts/bench-spark}).
 */
public final class SparkScore {
    private SparkScore() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length == 1 && args[0].equals("--jvm-options")) {
            ExecutorPython.jvmOptions().forEach(System.out::println);
            return;
        }
        Map<String, String> a = options(args);
        String master = required(a, "--master");
        String input = required(a, "--input");
        String output = required(a, "--output");
        int executors = Integer.parseInt(a.getOrDefault("--executors", "2"));
        int batch = Integer.parseInt(a.getOrDefault("--batch", "1024"));
        int repeat = Integer.parseInt(a.getOrDefault("--repeat", "1"));
        String route = a.getOrDefault("--route", "arrow");
        if (!route.equals("arrow") && !route.equals("rows")) {
            throw new IllegalArgumentException("--route is arrow or rows, not " + route);
        }
        boolean arrow = route.equals("arrow") && !a.containsKey("--no-model");
        String python = a.getOrDefault("--python", System.getenv("DLPACK4J_PYTHON"));
        if (python == null) {
            throw new IllegalArgumentException("name the executors' Python: --python EXE or DLPACK4J_PYTHON");
        }

        SparkConf conf = new SparkConf().setMaster(master).setAppName("spark-batch-inference")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1")
                // A task per 16 MiB of Parquet: enough tasks to share among the executors, and to rerun
                // little when one is lost.
                .set("spark.sql.files.maxPartitionBytes", "16m");
        ExecutorPython.configure(conf, python);
        // Each executor starts Python, imports torch and loads Arrow's library as it starts, while it
        // registers, instead of in its first task.
        ExecutorPython.warmUp(conf, "torch");
        if (master.startsWith("spark://")) {
            conf.set("spark.executor.cores", "1")
                    .set("spark.cores.max", String.valueOf(executors))
                    .set("spark.executor.memory", "1g")
                    // The executors run on this machine: they take this JVM's class path as it is.
                    .set("spark.executor.extraClassPath", System.getProperty("java.class.path"))
                    // The files are no nearer to one executor than to another: no waiting for locality
                    // (3 s by default, which Parquet splits on "localhost" would wait per job).
                    .set("spark.locality.wait", "0")
                    .set("spark.scheduler.minRegisteredResourcesRatio", "1.0")
                    .set("spark.scheduler.maxRegisteredResourcesWaitingTime", "120s");
        }
        // --conf last, over the settings above; then configure and warmUp again, which keep what it set
        // (its executor options, its plugins and modules) and add what they need if it dropped it.
        for (String kv : a.getOrDefault("--conf", "").split("\n")) {
            if (!kv.isEmpty()) {
                conf.set(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
            }
        }
        ExecutorPython.configure(conf, python);
        ExecutorPython.warmUp(conf, conf.get(ExecutorWarmup.MODULES, "torch").split(","));
        SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
        double session = (System.currentTimeMillis() - ManagementFactory.getRuntimeMXBean().getStartTime()) / 1e3;
        try {
            // Absolute: the executors resolve it, in working directories of their own.
            String weights = a.containsKey("--weights") ? Path.of(a.get("--weights")).toAbsolutePath().toString()
                    : seededWeights();
            // One torch thread per task: the tasks are the parallelism (executor cores, or local[N]).
            ExecutorModel mlp = ExecutorModel.fromSource("mlp", resource("mlp.py"), "load", weights, 1);
            BatchInference scoring = BatchInference.builder()
                    .input("features", 256)
                    .passThrough("id")
                    .model(mlp)
                    .output("scores", DataTypes.FloatType, 16)
                    .batchSize(batch)
                    .build();
            // --repeat N: the same job N times in this application; the last one finds the executors'
            // Python, torch and model loaded, and Java's code compiled: the scoring alone.
            List<String> jobs = new ArrayList<>();
            InferenceMetrics metrics = null;
            double job = 0;
            long cpuOfLastJob = 0;
            // The task threads' CPU time of the last job, which load from other processes on the
            // machine changes less than its wall time.
            java.util.concurrent.atomic.LongAdder cpu = new java.util.concurrent.atomic.LongAdder();
            spark.sparkContext().addSparkListener(new org.apache.spark.scheduler.SparkListener() {
                @Override
                public void onTaskEnd(org.apache.spark.scheduler.SparkListenerTaskEnd end) {
                    if (end.taskMetrics() != null) {
                        cpu.add(end.taskMetrics().executorCpuTime());
                    }
                }
            });
            String firstJob = "";
            long written = -1;
            for (int run = 0; run < repeat; run++) {
                metrics = InferenceMetrics.register(spark.sparkContext());
                cpu.reset();
                long start = System.nanoTime();
                if (arrow) {
                    deleteRecursively(Path.of(output)); // as the row route's mode("overwrite")
                    written = scoring.transformParquet(spark, input, output, metrics);
                } else {
                    Dataset<Row> in = spark.read().parquet(input);
                    Dataset<Row> scored = a.containsKey("--no-model")
                            ? in.select(functions.col("id"), functions.slice(functions.col("features"), 1, 16).as("scores"))
                            : scoring.transform(in, metrics);
                    // Scores are floats that do not repeat: a dictionary page would only be built and
                    // thrown away (Parquet's writer spent more time on that than on anything else of the job).
                    scored.write().mode("overwrite").option("parquet.enable.dictionary", "false").parquet(output);
                }
                job = (System.nanoTime() - start) / 1e9;
                try {
                    spark.sparkContext().listenerBus().waitUntilEmpty(); // the job's last task-end events
                } catch (java.util.concurrent.TimeoutException e) {
                    throw new IllegalStateException(e);
                }
                cpuOfLastJob = cpu.sum();
                jobs.add(String.format(Locale.ROOT, "%.2f", job));
                if (run == 0) {
                    firstJob = String.format(Locale.ROOT, "the first job %.2f s, %s", job, metrics.startup());
                }
            }
            // The Parquet route says how many rows it wrote; the row route's output is counted by reading
            // it back (a Spark job of its own: seconds in a new application).
            long rows = written >= 0 ? written : spark.read().parquet(output).count();
            double total = (System.currentTimeMillis() - ManagementFactory.getRuntimeMXBean().getStartTime()) / 1e3;
            System.out.println(String.format(Locale.ROOT,
                    "spark-score: %d rows in %.1f s (the scoring job %.2f s, %.0f rows/s, task CPU %.2f s, executors' "
                            + "process CPU %.2f s%s), route %s, master %s, executors pid %s (driver pid %d); start-up: the "
                            + "session %.1f s after the driver JVM's start, %s; %s",
                    rows, total, job, rows / job, cpuOfLastJob / 1e9, metrics.processCpuSeconds(),
                    repeat > 1 ? "; jobs " + String.join(" ", jobs) + " s" : "", a.containsKey("--no-model") ? "rows" : route,
                    master,
                    metrics.executorPids().stream().map(String::valueOf).collect(Collectors.joining(", ")),
                    ProcessHandle.current().pid(), session, firstJob, a.containsKey("--no-model") ? "no model" : metrics));
        } finally {
            spark.stop();
        }
    }

    private static void deleteRecursively(Path dir) throws IOException {
        if (Files.exists(dir)) {
            try (Stream<Path> all = Files.walk(dir)) {
                for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
    }

    /** The mlp's weights drawn from seed 0, written once by the driver's own embedded Python. */
    private static String seededWeights() throws IOException {
        Path file = Path.of(System.getProperty("java.io.tmpdir"), "dlpack4j-spark-score-mlp-seed0.pt");
        Python py = ExecutorPython.get(); // the Python that ExecutorPython.configure named
        try (PyObject module = module(py, "mlp", resource("mlp.py"));
             PyObject save = module.attr("save_weights");
             PyObject done = save.call(file.toString(), 0)) {
            return file.toString();
        }
    }

    /** {@return {@code source} run as a module of its own, named {@code name} (not in {@code sys.modules})} */
    static PyObject module(Python py, String name, String source) {
        try (PyObject types = py.importModule("types");
             PyObject builtins = py.importModule("builtins")) {
            PyObject module = types.callMethod("ModuleType", name);
            try (PyObject namespace = module.attr("__dict__");
                 PyObject ignored = builtins.callMethod("exec", source, namespace)) {
                return module;
            } catch (RuntimeException | Error e) {
                module.close();
                throw e;
            }
        }
    }

    private static String resource(String name) throws IOException {
        try (InputStream in = SparkScore.class.getResourceAsStream("/" + name)) {
            if (in == null) {
                throw new IOException(name + " is not on the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--no-model")) {
                a.put(args[i], "true");
            } else if (args[i].equals("--conf") && i + 1 < args.length && args[i + 1].contains("=")) {
                a.merge(args[i], args[++i], (x, y) -> x + "\n" + y);
            } else if (args[i].startsWith("--") && i + 1 < args.length) {
                a.put(args[i], args[++i]);
            } else {
                throw new IllegalArgumentException("unexpected argument " + args[i]);
            }
        }
        return a;
    }

    private static String required(Map<String, String> a, String option) {
        String v = a.get(option);
        if (v == null) {
            throw new IllegalArgumentException("missing " + option);
        }
        return v;
    }
}
