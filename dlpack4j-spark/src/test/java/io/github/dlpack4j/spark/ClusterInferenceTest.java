package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

import org.apache.spark.SparkException;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Batch inference on a cluster of JVMs: Spark's local cluster runs a Master and two Workers in this
 * JVM, and each Worker starts its executor as a JVM of its own, which embeds its own Python.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterInferenceTest {
    /** The mlp of the example: Linear(256, 256), ReLU, Linear(256, 16), from a state_dict file. */
    static final String MLP = """
            import torch

            def load(weights, threads):
                torch.set_num_threads(threads)
                model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 16))
                model.load_state_dict(torch.load(weights, weights_only=True))
                model.eval()

                def score(features):
                    with torch.inference_mode():
                        return model(torch.from_dlpack(features))
                return score
            """;

    private static final int EXECUTORS = 2;
    private static SparkSession spark;

    @BeforeAll
    static void startCluster() {
        spark = Sparks.cluster(EXECUTORS);
    }

    /**
     * Each test starts with every executor registered: a test that killed one leaves the Worker
     * starting its replacement (a JVM and its Python), and on a busy machine the next test's job
     * would otherwise run all its tasks on the executor that is left.
     */
    @BeforeEach
    void everyExecutorRegistered() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (liveExecutors() < EXECUTORS && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertThat(liveExecutors()).as("executors registered").isEqualTo(EXECUTORS);
    }

    private static int liveExecutors() {
        return spark.sparkContext().statusTracker().getExecutorInfos().length - 1; // the driver is one of them
    }

    @AfterAll
    static void stopCluster() {
        Sparks.stop();
    }

    @Test
    @Order(1)
    void executors_are_other_processes_than_the_driver_each_embedding_its_own_python() {
        String whereAmI = """
                import os, torch

                def load():
                    def score(x):
                        x = torch.from_dlpack(x)
                        return x * 2, torch.full(x.shape, os.getpid(), dtype=torch.int64)
                    return score
                """;
        Dataset<Row> in = numbers(40).repartition(4);
        InferenceMetrics metrics = InferenceMetrics.register(spark.sparkContext());
        BatchInference inference = BatchInference.builder().input("x").passThrough("id").batchSize(5)
                .model(ExecutorModel.fromSource("where-am-i", whereAmI, "load"))
                .output("y", DataTypes.DoubleType).output("pid", DataTypes.LongType).build();

        List<Row> out = inference.transform(in, metrics).collectAsList();

        assertThat(out).hasSize(40).allSatisfy(r -> assertThat(r.getDouble(1)).isEqualTo(r.getLong(0) * 2.0));
        List<Long> pythonPids = out.stream().map(r -> r.getLong(2)).distinct().sorted().toList();
        assertThat(metrics.executorPids()).hasSize(2).doesNotContain(ProcessHandle.current().pid())
                .as("the pids Python saw: Python runs inside the executor JVMs").isEqualTo(pythonPids);
        assertThat(executorProcesses()).extracting(ProcessHandle::pid).containsExactlyInAnyOrderElementsOf(pythonPids);
        // the first job of the cluster: each executor says how it got ready, its warm-up (ExecutorWarmup) included
        assertThat(metrics.executorStartups()).extracting(ExecutorStartup::pid).isEqualTo(pythonPids);
        assertThat(metrics.executorStartups()).allSatisfy(s -> {
            assertThat(s.warmUpStarted()).isGreaterThanOrEqualTo(s.jvmStarted());
            assertThat(s.pythonStarted()).isGreaterThanOrEqualTo(s.warmUpStarted());
            assertThat(s.firstTask()).isGreaterThanOrEqualTo(s.jvmStarted());
            assertThat(s.firstModel()).isGreaterThanOrEqualTo(Math.max(s.firstTask(), s.pythonStarted()));
            assertThat(s.modelsBuilt()).as("no model was given to the warm-up").isEqualTo(-1);
        });
    }

    @Test
    @Order(2)
    void mlp_scores_equal_torch_run_directly_on_the_same_parquet(@TempDir Path dir) {
        Python py = ExecutorPython.get();
        String input = dir.resolve("in").toString();
        String output = dir.resolve("out").toString();
        String weights = dir.resolve("mlp.pt").toString();
        py.exec(String.format("""
                import numpy as np, pyarrow as pa, pyarrow.parquet as pq, torch, os
                os.makedirs(%1$s)
                rng = np.random.default_rng(7)
                for part in range(4):
                    x = rng.standard_normal((1500, 256), dtype=np.float32)
                    ids = pa.array(np.arange(part * 1500, (part + 1) * 1500, dtype=np.int64))
                    features = pa.ListArray.from_arrays(pa.array(np.arange(0, x.size + 1, 256, dtype=np.int32)),
                                                        pa.array(x.reshape(-1)))
                    pq.write_table(pa.table({"id": ids, "features": features}), f"{%1$s}/part-{part}.parquet")
                torch.manual_seed(0)
                mlp = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 16))
                torch.save(mlp.state_dict(), %2$s)
                """, Sparks.pyLiteral(input), Sparks.pyLiteral(weights)));

        BatchInference.builder().input("features", 256).passThrough("id").batchSize(512)
                .model(ExecutorModel.fromSource("mlp", MLP, "load", weights, 1))
                .output("scores", DataTypes.FloatType, 16).build()
                .transform(spark.read().parquet(input)).write().parquet(output);

        py.exec("""
                def compare_with_torch(input, output):
                    inp = pq.read_table(input).sort_by("id")
                    out = pq.read_table(output).sort_by("id")
                    x = torch.from_numpy(inp.column("features").combine_chunks().values.to_numpy().reshape(-1, 256).copy())
                    got = torch.from_numpy(out.column("scores").combine_chunks().values.to_numpy().reshape(-1, 16).copy())
                    with torch.inference_mode():
                        want = mlp(x)
                    return {"rows": out.num_rows, "same ids": inp.column("id").equals(out.column("id")),
                            "max diff": float((got - want).abs().max()), "scale": float(want.abs().max()),
                            "equal": bool(torch.equal(got, want))}
                """);
        try (PyObject compare = py.getGlobal("compare_with_torch");
             PyObject report = compare.call(input, output)) {
            @SuppressWarnings("unchecked")
            Map<String, Object> r = (Map<String, Object>) report.toJava();
            assertThat(r).containsEntry("rows", 6000L).containsEntry("same ids", true);
            assertThat((Double) r.get("max diff")).as("largest |Spark - torch| of scores up to %s (%s)",
                    r.get("scale"), r).isLessThanOrEqualTo(1e-5);
        }
    }

    @Test
    @Order(3)
    void bad_rows_and_python_errors_fail_the_job_with_the_column_and_id_or_the_python_exception() {
        Dataset<Row> shortArray = spark.createDataFrame(List.of(RowFactory.create(41L, seq(1f, 2f, 3f)),
                RowFactory.create(42L, seq(1f, 2f))), new StructType(new StructField[] {
                    new StructField("id", DataTypes.LongType, false, Metadata.empty()),
                    new StructField("features", DataTypes.createArrayType(DataTypes.FloatType), true, Metadata.empty())}));
        String failing = """
                def load():
                    def score(features):
                        raise KeyError("no such feature")
                    return score
                """;
        BatchInference inference = BatchInference.builder().input("features", 3).passThrough("id")
                .model(ExecutorModel.fromSource("failing", failing, "load")).output("y", DataTypes.FloatType, 3).build();

        assertThatThrownBy(() -> inference.transform(shortArray.coalesce(1)).collectAsList())
                .isInstanceOf(SparkException.class)
                .hasMessageContaining("column features of the row with id=42 (row 1 of partition 0) holds 2 values");
        assertThatThrownBy(() -> inference.transform(shortArray.limit(1)).collectAsList())
                .isInstanceOf(SparkException.class)
                .hasMessageContaining("io.github.dlpack4j.python.PythonException: KeyError: 'no such feature'");
    }

    @Test
    @Order(4)
    void a_killed_executor_has_its_tasks_rerun_and_the_output_is_complete_and_right(@TempDir Path dir) throws Exception {
        String slow = """
                import time, torch

                def load():
                    def score(x):
                        time.sleep(0.1)
                        return torch.from_dlpack(x) * 3
                    return score
                """;
        List<Row> rows = new ArrayList<>();
        for (long id = 0; id < 2000; id++) {
            rows.add(RowFactory.create(id, seq(id / 8f, (float) -id, 0.5f, 1f)));
        }
        Dataset<Row> in = spark.createDataFrame(rows, new StructType(new StructField[] {
                new StructField("id", DataTypes.LongType, false, Metadata.empty()),
                new StructField("x", DataTypes.createArrayType(DataTypes.FloatType), false, Metadata.empty())}))
                .repartition(10);
        // Ten files, each a partition of its own, read by a job of one stage: the executor dies in
        // the middle of the scoring itself.
        String input = dir.resolve("in").toString();
        in.write().parquet(input);
        spark.conf().set("spark.sql.files.maxPartitionBytes", "64k");
        AtomicInteger succeeded = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicInteger removed = new AtomicInteger();
        Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
        spark.sparkContext().addSparkListener(new SparkListener() {
            @Override
            public void onTaskStart(SparkListenerTaskStart start) {
                running.computeIfAbsent(start.taskInfo().executorId(), e -> new AtomicInteger()).incrementAndGet();
            }

            @Override
            public void onTaskEnd(SparkListenerTaskEnd end) {
                running.get(end.taskInfo().executorId()).decrementAndGet();
                (end.taskInfo().successful() ? succeeded : failed).incrementAndGet();
            }

            @Override
            public void onExecutorRemoved(SparkListenerExecutorRemoved event) {
                removed.incrementAndGet();
            }
        });
        String output = dir.resolve("out").toString();
        BatchInference inference = BatchInference.builder().input("x", 4).passThrough("id").batchSize(50)
                .model(ExecutorModel.fromSource("slow", slow, "load")).output("y", DataTypes.FloatType, 4).build();
        CompletableFuture<Void> job = CompletableFuture.runAsync(
                () -> inference.transform(spark.read().parquet(input)).write().parquet(output));

        String busy = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while ((busy == null || succeeded.get() < 2) && !job.isDone() && System.nanoTime() < deadline) {
            Thread.sleep(10);
            busy = running.entrySet().stream().filter(e -> e.getValue().get() > 0).map(Map.Entry::getKey)
                    .findFirst().orElse(null);
        }
        assertThat(job).as("the job still runs when an executor is killed").isNotDone();
        String executorId = busy;
        ProcessHandle victim = executorProcesses().stream()
                .filter(p -> p.info().commandLine().orElse("").contains("--executor-id " + executorId + " "))
                .findFirst().orElseThrow();
        assertThat(victim.destroyForcibly()).isTrue(); // SIGKILL, in the middle of one of its tasks
        try {
            job.get(120, TimeUnit.SECONDS);
        } finally {
            spark.conf().unset("spark.sql.files.maxPartitionBytes");
        }

        assertThat(removed.get()).as("executors lost").isEqualTo(1);
        assertThat(failed.get()).as("tasks lost with it").isPositive();
        List<Row> out = spark.read().parquet(output).orderBy("id").collectAsList();
        assertThat(out).hasSize(2000);
        for (int i = 0; i < out.size(); i++) {
            long id = out.get(i).getLong(0);
            assertThat(id).isEqualTo(i);
            assertThat(out.get(i).getList(1)).containsExactly(id / 8f * 3, -id * 3f, 1.5f, 3f);
        }
    }

    @Test
    @Order(5)
    void the_parquet_route_scores_equal_torch_and_the_row_route_bit_for_bit_in_the_executor_jvms(@TempDir Path dir) {
        Python py = ExecutorPython.get();
        String input = dir.resolve("in").toString();
        String weights = dir.resolve("mlp.pt").toString();
        py.exec(String.format("""
                import numpy as np, pyarrow as pa, pyarrow.parquet as pq, torch, os
                os.makedirs(%1$s)
                rng = np.random.default_rng(8)
                for part in range(4):
                    x = rng.standard_normal((1200, 256), dtype=np.float32)
                    ids = pa.array(np.arange(part * 1200, (part + 1) * 1200, dtype=np.int64))
                    features = pa.ListArray.from_arrays(pa.array(np.arange(0, x.size + 1, 256, dtype=np.int32)),
                                                        pa.array(x.reshape(-1)))
                    pq.write_table(pa.table({"id": ids, "features": features}), f"{%1$s}/part-{part}.parquet",
                                   row_group_size=700)
                torch.manual_seed(0)
                mlp = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 16))
                torch.save(mlp.state_dict(), %2$s)
                torch.set_num_threads(1)

                def batches_of(input, batch):
                    out = []
                    for part in range(4):
                        f = pq.ParquetFile(f"{input}/part-{part}.parquet")
                        for g in range(f.num_row_groups):  # the Parquet route's batches never span row groups
                            x = f.read_row_group(g).column("features").combine_chunks().values.to_numpy()
                            x = x.reshape(-1, 256)
                            for start in range(0, len(x), batch):
                                with torch.inference_mode():
                                    out.append(mlp(torch.from_numpy(x[start:start + batch].copy())).numpy())
                    return np.concatenate(out)

                def same_bits(a, b):
                    t = pq.read_table(a).sort_by("id")
                    got = t.column("scores").combine_chunks().values.to_numpy().reshape(-1, 16)
                    other = b if not isinstance(b, str) else \
                        pq.read_table(b).sort_by("id").column("scores").combine_chunks().values.to_numpy().reshape(-1, 16)
                    return t.column("id").to_pylist() == list(range(4800)) and \
                        bool(np.array_equal(got.view(np.int32), other.view(np.int32)))
                """, Sparks.pyLiteral(input), Sparks.pyLiteral(weights)));
        InferenceMetrics metrics = InferenceMetrics.register(spark.sparkContext());
        BatchInference mlp = BatchInference.builder().input("features", 256).passThrough("id").batchSize(512)
                .model(ExecutorModel.fromSource("mlp", MLP, "load", weights, 1))
                .output("scores", DataTypes.FloatType, 16).build();

        assertThat(mlp.transformParquet(spark, input, dir.resolve("arrow").toString(), metrics)).isEqualTo(4800);
        spark.conf().set("spark.sql.files.maxPartitionBytes", "64k"); // the row route: batches within row groups too
        try {
            mlp.transform(spark.read().parquet(input)).write().parquet(dir.resolve("rows").toString());
        } finally {
            spark.conf().unset("spark.sql.files.maxPartitionBytes");
        }

        assertThat(metrics.executorPids()).hasSize(2).doesNotContain(ProcessHandle.current().pid());
        try (PyObject sameBits = py.getGlobal("same_bits");
             PyObject batches = py.getGlobal("batches_of");
             PyObject want = batches.call(input, 512);
             PyObject asTorch = sameBits.call(dir.resolve("arrow").toString(), want);
             PyObject asRows = sameBits.call(dir.resolve("arrow").toString(), dir.resolve("rows").toString())) {
            assertThat(asTorch.toJava()).as("equal to torch on the same batches, bit for bit").isEqualTo(true);
            assertThat(asRows.toJava()).as("equal to the row route's output, bit for bit").isEqualTo(true);
        }
    }

    @Test
    @Order(6)
    void a_killed_executor_on_the_parquet_route_leaves_every_row_once_and_no_partial_file(@TempDir Path dir)
            throws Exception {
        String slow = """
                import time, torch

                def load():
                    def score(x):
                        time.sleep(0.1)
                        return torch.from_dlpack(x) * 3
                    return score
                """;
        Python py = ExecutorPython.get();
        String input = dir.resolve("in").toString();
        py.exec(String.format("""
                import numpy as np, pyarrow as pa, pyarrow.parquet as pq, os
                os.makedirs(%1$s)
                for part in range(10):
                    ids = np.arange(part * 200, part * 200 + 200, dtype=np.int64)
                    x = np.stack([ids / 8, -ids, np.full(200, 0.5), np.ones(200)], axis=1).astype(np.float32)
                    features = pa.ListArray.from_arrays(pa.array(np.arange(0, 801, 4, dtype=np.int32)),
                                                        pa.array(x.reshape(-1)))
                    pq.write_table(pa.table({"id": pa.array(ids), "x": features}), f"{%1$s}/part-{part:02d}.parquet")
                """, Sparks.pyLiteral(input)));
        AtomicInteger succeeded = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicInteger removed = new AtomicInteger();
        Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
        SparkListener listener = new SparkListener() {
            @Override
            public void onTaskStart(SparkListenerTaskStart start) {
                running.computeIfAbsent(start.taskInfo().executorId(), e -> new AtomicInteger()).incrementAndGet();
            }

            @Override
            public void onTaskEnd(SparkListenerTaskEnd end) {
                running.get(end.taskInfo().executorId()).decrementAndGet();
                (end.taskInfo().successful() ? succeeded : failed).incrementAndGet();
            }

            @Override
            public void onExecutorRemoved(SparkListenerExecutorRemoved event) {
                removed.incrementAndGet();
            }
        };
        spark.sparkContext().addSparkListener(listener);
        Path output = dir.resolve("out");
        BatchInference inference = BatchInference.builder().input("x", 4).passThrough("id").batchSize(50)
                .model(ExecutorModel.fromSource("slow", slow, "load")).output("y", DataTypes.FloatType, 4).build();
        CompletableFuture<Long> job = CompletableFuture.supplyAsync(
                () -> inference.transformParquet(spark, input, output.toString()));

        String busy = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while ((busy == null || succeeded.get() < 2) && !job.isDone() && System.nanoTime() < deadline) {
            Thread.sleep(10);
            busy = running.entrySet().stream().filter(e -> e.getValue().get() > 0).map(Map.Entry::getKey)
                    .findFirst().orElse(null);
        }
        assertThat(job).as("the job still runs when an executor is killed").isNotDone();
        String executorId = busy;
        ProcessHandle victim = executorProcesses().stream()
                .filter(p -> p.info().commandLine().orElse("").contains("--executor-id " + executorId + " "))
                .findFirst().orElseThrow();
        assertThat(victim.destroyForcibly()).isTrue(); // SIGKILL, in the middle of one of its tasks
        try {
            assertThat(job.get(120, TimeUnit.SECONDS)).isEqualTo(2000);
        } finally {
            spark.sparkContext().removeSparkListener(listener);
        }

        assertThat(removed.get()).as("executors lost").isEqualTo(1);
        assertThat(failed.get()).as("tasks lost with it").isPositive();
        try (java.util.stream.Stream<Path> files = java.nio.file.Files.list(output)) {
            assertThat(files.map(p -> p.getFileName().toString()).toList())
                    .as("the part files and _SUCCESS only: no attempt's partial file, no _temporary")
                    .hasSize(11).contains("_SUCCESS").allMatch(f -> f.equals("_SUCCESS") || f.startsWith("part-"));
        }
        List<Row> out = spark.read().parquet(output.toString()).orderBy("id").collectAsList();
        assertThat(out).hasSize(2000);
        for (int i = 0; i < out.size(); i++) {
            long id = out.get(i).getLong(0);
            assertThat(id).as("every id once").isEqualTo(i);
            assertThat(out.get(i).getList(1)).containsExactly(id / 8f * 3, -id * 3f, 1.5f, 3f);
        }
    }

    /** {@return the executor JVMs the Workers started: this JVM's children running Spark's executor backend} */
    private static List<ProcessHandle> executorProcesses() {
        return ProcessHandle.current().children()
                .filter(p -> p.info().commandLine().orElse("").contains("CoarseGrainedExecutorBackend"))
                .toList();
    }

    private static Dataset<Row> numbers(int n) {
        List<Row> rows = new ArrayList<>();
        for (long id = 0; id < n; id++) {
            rows.add(RowFactory.create(id, (double) id));
        }
        return spark.createDataFrame(rows, new StructType(new StructField[] {
                new StructField("id", DataTypes.LongType, false, Metadata.empty()),
                new StructField("x", DataTypes.DoubleType, false, Metadata.empty())}));
    }

    private static Object seq(Object... values) {
        return scala.jdk.javaapi.CollectionConverters.asScala(List.of(values)).toSeq();
    }

}
