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
import io.github.dlpack4j.spark.ExecutorStartup;
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
 * {@code scores} array&lt;float&gt; of 16), and prints where its time went and a summary line.
 *
 * <pre>
 * SparkScore --master local[N]|spark://HOST:PORT [--executors N] --input DIR --output DIR [--route arrow|rows]
 *            [--weights FILE] [--batch N] [--repeat N] [--python EXE] [--no-model] [--conf KEY=VALUE]...
 *            [--parts FILE]
 * SparkScore --jvm-options      the JVM options this driver needs, one per line
 * </pre>
 *
 * ({@code scripts/spark-score --master cluster} starts the standalone Master and Worker that a
 * {@code spark://} master names.) {@code --route arrow} (the default) reads and writes the Parquet
 * with Arrow's C++ inside the tasks ({@link BatchInference#transformParquet}); {@code --route rows}
 * with Spark's own reader and writer, the model in between ({@link BatchInference#transform}).
 * {@code --no-model} runs the job without the model, its scores the first 16 features: what Spark's
 * reading and writing cost alone ({@code scripts/bench-spark}).
 *
 * <p>It prints two lines: the parts (where the command's time went, step by step: the build and the
 * cluster's start as {@code scripts/spark-score} writes them into {@code --parts FILE}, the
 * driver's session, each executor's start-up and warm-up, the jobs), then the summary.
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

        if (System.getProperty("dlpack4j.python") == null) {
            System.setProperty("dlpack4j.python", python); // the driver's own Python, which the seeded weights may need
        }
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

        SparkConf conf = new SparkConf().setMaster(master).setAppName("spark-batch-inference")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1")
                // A task per 16 MiB of Parquet: enough tasks to share among the executors, and to rerun
                // little when one is lost.
                .set("spark.sql.files.maxPartitionBytes", "16m");
        ExecutorPython.configure(conf, python);
        // Each executor starts Python, imports torch, loads Arrow's library and builds the model as it
        // starts, while it registers, instead of in its first task.
        ExecutorPython.warmUp(conf, "torch");
        if (!a.containsKey("--no-model")) {
            scoring.warmUp(conf);
        }
        // When the context and the executors came up, for the line of parts.
        conf.set("spark.extraListeners", Timeline.class.getName());
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
        long jvmStarted = ManagementFactory.getRuntimeMXBean().getStartTime();
        long sessionStarts = System.currentTimeMillis();
        SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
        long sessionReady = System.currentTimeMillis();
        double session = (sessionReady - jvmStarted) / 1e3;
        try {
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
            List<ExecutorStartup> startups = List.of();
            long firstJobStarted = 0;
            long written = -1;
            for (int run = 0; run < repeat; run++) {
                metrics = InferenceMetrics.register(spark.sparkContext());
                cpu.reset();
                if (run == 0) {
                    firstJobStarted = System.currentTimeMillis();
                }
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
                    startups = metrics.executorStartups();
                }
            }
            // The Parquet route says how many rows it wrote; the row route's output is counted by reading
            // it back (a Spark job of its own: seconds in a new application).
            long rows = written >= 0 ? written : spark.read().parquet(output).count();
            long end = System.currentTimeMillis();
            double total = (end - jvmStarted) / 1e3;
            System.out.println(parts(a.get("--parts"), jvmStarted, spark.sparkContext().startTime(), sessionStarts,
                    sessionReady, startups, firstJobStarted, jobs, end));
            System.out.println(String.format(Locale.ROOT,
                    "spark-score: %d rows in %.1f s (the scoring job %.2f s, %.0f rows/s, task CPU %.2f s, executors' "
                            + "process CPU %.2f s%s), route %s, master %s, executors pid %s (driver pid %d); start-up: the "
                            + "SparkSession %.1f s after the driver JVM's start, %s; %s",
                    rows, total, job, rows / job, cpuOfLastJob / 1e9, metrics.processCpuSeconds(),
                    repeat > 1 ? "; jobs " + String.join(" ", jobs) + " s" : "", a.containsKey("--no-model") ? "rows" : route,
                    master,
                    metrics.executorPids().stream().map(String::valueOf).collect(Collectors.joining(", ")),
                    ProcessHandle.current().pid(), session, firstJob, a.containsKey("--no-model") ? "no model" : metrics));
        } finally {
            spark.stop();
        }
    }

    /**
     * The line of parts: where the command's time went, each step as the seconds after the command's
     * start (after its build, which {@code scripts/spark-score} writes into {@code partsFile} with
     * the cluster's steps; the driver JVM's start without it): the build, the Master and the
     * Worker, the driver's context and its executors, each executor's start-up (its JVM, the
     * warm-up's steps, its first task), and the jobs.
     */
    static String parts(String partsFile, long jvmStarted, long contextStarted, long sessionStarts, long sessionReady,
                        List<ExecutorStartup> executors, long firstJobStarted, List<String> jobs, long end)
            throws IOException {
        Map<String, String> script = new HashMap<>();
        if (partsFile != null && Files.exists(Path.of(partsFile))) {
            for (String line : Files.readAllLines(Path.of(partsFile))) {
                int space = line.indexOf(' ');
                if (space > 0) {
                    script.put(line.substring(0, space), line.substring(space + 1).strip());
                }
            }
        }
        long origin = script.containsKey("start") ? (long) (Double.parseDouble(script.get("start")) * 1000) : jvmStarted;
        java.util.function.LongFunction<String> at = t -> t < 0 ? "-" : String.format(Locale.ROOT, "%.1f", (t - origin) / 1e3);
        java.util.function.BiFunction<Long, Long, String> took =
                (from, to) -> from < 0 || to < 0 ? "-" : String.format(Locale.ROOT, "%.1f", (to - from) / 1e3);
        StringBuilder b = new StringBuilder("spark-score: parts: build ").append(script.getOrDefault("build", "not timed (not run by scripts/spark-score)"));
        if (script.containsKey("master")) {
            long master = (long) (Double.parseDouble(script.get("master")) * 1000);
            String worker = script.containsKey("worker")
                    ? at.apply((long) (Double.parseDouble(script.get("worker")) * 1000)) : "?";
            b.append("; the cluster: the Master ready at ").append(at.apply(master)).append(", the Worker registered at ")
                    .append(worker);
        }
        b.append("; the driver: its JVM started at ").append(at.apply(jvmStarted))
                .append(", the SparkSession asked for at ").append(at.apply(sessionStarts))
                .append(", the context made at ").append(at.apply(contextStarted))
                .append(", registered with the master at ").append(at.apply(Timeline.applicationStarted));
        if (!Timeline.executorsAdded.isEmpty()) {
            b.append(", its executors registered at ").append(Timeline.executorsAdded.stream().sorted()
                    .map(at::apply).collect(Collectors.joining(" and ")));
        }
        b.append(", the SparkSession ready at ").append(at.apply(sessionReady));
        for (ExecutorStartup e : executors) {
            b.append("; executor ").append(e.pid()).append(": its JVM started at ").append(at.apply(e.jvmStarted()));
            if (e.warmUpStarted() >= 0) {
                // each step done at: the seconds it took after the step before (Python started by the
                // driver's own code in local mode, or Arrow's library by the driver's plugin, may be earlier)
                b.append(", the warm-up from ").append(at.apply(e.warmUpStarted())).append(": ");
                long before = e.warmUpStarted();
                List<String> steps = new ArrayList<>();
                for (Object[] step : new Object[][] {{"Python", e.pythonStarted()}, {"the imports", e.modulesImported()},
                        {"the model", e.modelsBuilt()}}) {
                    long done = (Long) step[1];
                    steps.add(step[0] + " " + (done < 0 ? "not by then" : done <= e.warmUpStarted() ? "before"
                            : "at " + at.apply(done) + " (" + took.apply(before, done) + " s)"));
                    before = Math.max(before, done);
                }
                steps.add("Arrow's library " + (e.arrowLoaded() < 0 ? "not loaded"
                        : e.arrowLoaded() <= e.warmUpStarted() ? "before"
                        : "at " + at.apply(e.arrowLoaded()) + " (" + took.apply(e.warmUpStarted(), e.arrowLoaded()) + " s)"));
                b.append(String.join(", ", steps));
            } else {
                b.append(", Python started at ").append(at.apply(e.pythonStarted()));
            }
            b.append("; its first task at ").append(at.apply(e.firstTask()))
                    .append(", scoring at ").append(at.apply(e.firstModel()));
        }
        b.append("; the jobs from ").append(at.apply(firstJobStarted)).append(": ").append(String.join(" ", jobs))
                .append(" s; the end at ").append(at.apply(end))
                .append(script.containsKey("start") ? " (seconds after the command's start, its build before it)"
                        : " (seconds after the driver JVM's start)");
        return b.toString();
    }

    /**
     * A listener that Spark makes as the context starts ({@code spark.extraListeners}): when the
     * application registered with the master and when each executor registered.
     */
    public static final class Timeline extends org.apache.spark.scheduler.SparkListener {
        static volatile long applicationStarted = -1;
        static final List<Long> executorsAdded = new java.util.concurrent.CopyOnWriteArrayList<>();

        /** For Spark, which makes it by reflection. */
        public Timeline() {
        }

        @Override
        public void onApplicationStart(org.apache.spark.scheduler.SparkListenerApplicationStart start) {
            applicationStarted = System.currentTimeMillis();
        }

        @Override
        public void onExecutorAdded(org.apache.spark.scheduler.SparkListenerExecutorAdded added) {
            executorsAdded.add(added.time());
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

    /**
     * The mlp's weights drawn from seed 0, written by the driver's own embedded Python the first
     * time (a file named by the model's source, which makes them), and kept: a later command finds
     * them and starts no Python in its driver.
     */
    private static String seededWeights() throws IOException {
        String source = resource("mlp.py");
        Path file = Path.of(System.getProperty("java.io.tmpdir"),
                "dlpack4j-spark-score-mlp-seed0-" + Integer.toHexString(source.hashCode()) + ".pt");
        if (Files.exists(file)) {
            return file.toString();
        }
        Python py = ExecutorPython.get(); // the Python that ExecutorPython.configure named
        Path written = Files.createTempFile(file.getParent(), "dlpack4j-spark-score-mlp-", ".pt");
        try (PyObject module = module(py, "mlp", source);
             PyObject save = module.attr("save_weights");
             PyObject done = save.call(written.toString(), 0)) {
            // whole or not at all, for a command running beside this one
            Files.move(written, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE,
                    java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            return file.toString();
        } finally {
            Files.deleteIfExists(written);
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
