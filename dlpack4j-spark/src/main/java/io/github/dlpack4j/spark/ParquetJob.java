package io.github.dlpack4j.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.spark.SparkContext;
import org.apache.spark.SparkJobInfo;
import org.apache.spark.SparkStageInfo;
import org.apache.spark.SparkStatusTracker;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;

/**
 * The driver's side of the Parquet route ({@link BatchInference#transformParquet}): it lists the
 * input files, runs one task per file ({@link ParquetTask}), and commits: each task attempt writes
 * under {@code output/_temporary/<job>/}, and only the files of the attempts whose results Spark
 * handed to the job (one per partition; a failed, killed or losing speculative attempt's never)
 * are moved to {@code output/part-NNNNN-<job>.parquet}, then {@code _SUCCESS} is written. A job
 * that fails leaves no part file.
 */
final class ParquetJob {
    /**
     * The setting that picks the tasks' Parquet writer, read from the session when a job starts:
     * {@code auto} (the default: pyarrow where the executors' interpreter imports {@code pyarrow.parquet}, else Arrow Java's),
     * {@code pyarrow} or {@code arrow} ({@link ParquetSink.Writer}).
     */
    static final String WRITER = "spark.dlpack4j.parquet.writer";

    private ParquetJob() {
    }

    /**
     * Runs the job.
     *
     * @return the rows written
     */
    static long run(SparkSession spark, String input, String output, List<TensorColumn> packed,
                    List<TensorColumn> inputs, List<TensorColumn> passThrough, List<TensorColumn> outputs, String key,
                    ExecutorModel model, int batchSize, InferenceMetrics metrics, StructType outputSchema) {
        Path in = localPath(input, "input");
        Path out = localPath(output, "output");
        List<String> files = inputFiles(in);
        checkEmpty(out);
        String job = UUID.randomUUID().toString();
        Path temporary = out.resolve("_temporary").resolve(job);
        String writer = spark.conf().get(WRITER, "auto").strip().toLowerCase(java.util.Locale.ROOT);
        if (!List.of("auto", "pyarrow", "arrow").contains(writer)) {
            throw new IllegalArgumentException(WRITER + " is " + writer + ": auto, pyarrow or arrow");
        }
        ParquetTask task = new ParquetTask(packed, inputs, passThrough, outputs, key, model, batchSize, metrics,
                temporary.toString(), writer);
        List<Path> committed = new ArrayList<>();
        SparkContext sc = spark.sparkContext();
        String tag = "dlpack4j-parquet-" + job;
        try {
            Files.createDirectories(temporary);
            List<ParquetTask.Written> written;
            sc.addJobTag(tag);
            try {
                written = JavaSparkContext.fromSparkContext(sc).parallelize(files, files.size()).mapPartitions(task)
                        .collect();
            } finally {
                sc.removeJobTag(tag);
            }
            awaitTasks(sc, tag); // a speculative attempt that lost may still be writing under _temporary
            long rows = 0;
            for (ParquetTask.Written w : written.stream().sorted(Comparator.comparingInt(ParquetTask.Written::partition)
                    .thenComparing(ParquetTask.Written::file)).toList()) {
                rows += w.rows();
                if (w.written() != null) {
                    // one file a partition: parallelize(files, files.size()) gives each partition one file
                    Path to = out.resolve(String.format("part-%05d-%s.parquet", w.partition(), job));
                    Files.move(Path.of(w.written()), to, StandardCopyOption.ATOMIC_MOVE);
                    committed.add(to);
                }
            }
            if (committed.isEmpty()) {
                committed.add(writeEmpty(spark, out, temporary, job, outputSchema));
            }
            Files.createFile(out.resolve("_SUCCESS"));
            try {
                ParquetTask.deleteRecursively(out.resolve("_temporary"));
            } catch (UncheckedIOException e) {
                // an attempt that lost and still writes there, past awaitTasks: the output is complete and
                // committed, and readers skip _temporary
            }
            return rows;
        } catch (IOException e) {
            UncheckedIOException failure = new UncheckedIOException("committing " + out + ": " + e.getMessage(), e);
            abort(sc, tag, out, committed, failure);
            throw failure;
        } catch (Throwable e) { // SparkException too, which Scala throws undeclared
            abort(sc, tag, out, committed, e);
            throw e;
        }
    }

    /**
     * Waits up to 30 s until no task of the jobs tagged {@code tag} runs: when a job ends, Spark kills
     * the attempts still running (the other tasks of a failed job, a speculative attempt that lost)
     * and they end a little later. The tracker reads what the listener bus has delivered: it is
     * drained first.
     */
    private static void awaitTasks(SparkContext sc, String tag) {
        SparkStatusTracker status = sc.statusTracker();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            try {
                sc.listenerBus().waitUntilEmpty(TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
            } catch (java.util.concurrent.TimeoutException e) {
                return;
            }
            boolean running = false;
            for (int jobId : status.getJobIdsForTag(tag)) {
                scala.Option<SparkJobInfo> info = status.getJobInfo(jobId);
                for (int stageId : info.isEmpty() ? new int[0] : info.get().stageIds()) {
                    scala.Option<SparkStageInfo> stage = status.getStageInfo(stageId);
                    running |= stage.isDefined() && stage.get().numActiveTasks() > 0;
                }
            }
            if (!running) {
                return;
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Cancels the job's tasks, waits for them and deletes what it wrote; a failure here joins {@code failure}. */
    private static void abort(SparkContext sc, String tag, Path out, List<Path> committed, Throwable failure) {
        try {
            sc.cancelJobsWithTag(tag); // throws if the context stopped, which may be why the job failed
            awaitTasks(sc, tag);
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
        try {
            for (Path p : committed) {
                Files.deleteIfExists(p);
            }
            ParquetTask.deleteRecursively(out.resolve("_temporary"));
        } catch (IOException | UncheckedIOException e) {
            // the job's own failure is the one to report; what is left is under _temporary or named here
        }
    }

    /** A file that holds the schema and no row, which Arrow's writer cannot make: Spark's writer does. */
    private static Path writeEmpty(SparkSession spark, Path out, Path temporary, String job, StructType schema)
            throws IOException {
        Path dir = temporary.resolve("empty");
        spark.createDataFrame(List.<Row>of(), schema).coalesce(1).write().parquet(dir.toString());
        try (Stream<Path> files = Files.list(dir)) {
            Path part = files.filter(p -> p.getFileName().toString().endsWith(".parquet")).findFirst()
                    .orElseThrow(() -> new IllegalStateException("Spark wrote no file for an empty output in " + dir));
            Path to = out.resolve(String.format("part-%05d-%s.parquet", 0, job));
            Files.move(part, to, StandardCopyOption.ATOMIC_MOVE);
            return to;
        }
    }

    /**
     * The input's Parquet files: the file itself, or a directory's files, sorted by name, leaving out
     * names that start with {@code _} or {@code .} (as Spark and pyarrow do).
     *
     * @throws IllegalArgumentException if it is neither, holds a directory, or holds no file
     */
    static List<String> inputFiles(Path in) {
        if (Files.isRegularFile(in)) {
            return List.of(in.toString());
        }
        if (!Files.isDirectory(in)) {
            throw new IllegalArgumentException("the input " + in + " is neither a Parquet file nor a directory of them");
        }
        List<String> files = new ArrayList<>();
        try (Stream<Path> all = Files.list(in)) {
            for (Path p : all.sorted().toList()) {
                String name = p.getFileName().toString();
                if (name.startsWith("_") || name.startsWith(".")) {
                    continue;
                }
                if (Files.isDirectory(p)) {
                    throw new IllegalArgumentException("the input " + in + " holds the directory " + name + ": the Parquet "
                            + "route reads a directory of files, not a partitioned dataset (use transform, the row route)");
                }
                files.add(p.toString());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + in, e);
        }
        if (files.isEmpty()) {
            throw new IllegalArgumentException("the input " + in + " holds no Parquet file, so no schema to read: as "
                    + "Spark's reader, the Parquet route needs one (a file without rows will do)");
        }
        return files;
    }

    private static void checkEmpty(Path out) {
        if (Files.exists(out)) {
            try (Stream<Path> entries = Files.list(out)) {
                if (entries.findAny().isPresent()) {
                    throw new IllegalArgumentException("the output " + out + " exists and is not empty: the Parquet route "
                            + "writes a new dataset (delete it first)");
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot list " + out, e);
            }
        }
    }

    /** {@return {@code path} as a local path: a plain path or a {@code file:} URI} */
    static Path localPath(String path, String what) {
        if (path.startsWith("file:")) {
            return Path.of(URI.create(path)).toAbsolutePath();
        }
        if (path.matches("^[a-zA-Z][a-zA-Z0-9+.-]*://.*")) {
            throw new IllegalArgumentException("the " + what + " " + path + " is not a local path: the Parquet route reads "
                    + "and writes files that the driver and every executor see at the same path (a plain path or a "
                    + "file: URI, such as a shared mount); use transform, the row route, for other filesystems");
        }
        return Path.of(path).toAbsolutePath();
    }
}
