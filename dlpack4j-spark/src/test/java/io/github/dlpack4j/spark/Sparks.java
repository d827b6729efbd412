package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;

/**
 * The tests' Spark: one session at a time per JVM (Spark allows one context), local or a local
 * cluster, started on first use and replaced when a test class needs the other kind.
 */
final class Sparks {
    private static SparkSession session;
    private static String master;

    private Sparks() {
    }

    /** {@return a local[2] session: the executor is this JVM} */
    static synchronized SparkSession local() {
        return session("local[2]");
    }

    /**
     * {@return a local cluster: a Master and {@code executors} Workers of one core in this JVM, each
     * Worker starting its executor as a JVM of its own}
     */
    static synchronized SparkSession cluster(int executors) {
        return session("local-cluster[" + executors + ",1,1024]");
    }

    /**
     * {@return the executors' interpreter of this JVM, with the Parquet tests' Python helpers
     * defined}: {@code ids_table(ids, n, seed)}, a pyarrow table of {@code id} (int64, the given
     * ids) and {@code features} (list<float> of {@code n} seeded normal values a row), and
     * {@code features_table(first, rows, n, seed)}, that table for the ids {@code first...}
     */
    static Python parquetPython() {
        Python py = ExecutorPython.get();
        py.exec("""
                import numpy as np, pyarrow as pa, pyarrow.parquet as pq, torch, os

                def ids_table(ids, n, seed):
                    x = np.random.default_rng(seed).standard_normal((len(ids), n), dtype=np.float32)
                    features = pa.ListArray.from_arrays(pa.array(np.arange(0, x.size + 1, n, dtype=np.int32)),
                                                        pa.array(x.reshape(-1)))
                    return pa.table({"id": pa.array(np.asarray(ids, dtype=np.int64)), "features": features})

                def features_table(first, rows, n, seed):
                    return ids_table(range(first, first + rows), n, seed)
                """);
        return py;
    }

    /**
     * Writes {@code dir/a.parquet} (making {@code dir}): {@code ids_table(range(rows), n, seed)},
     * with {@code py} from {@link #parquetPython()}.
     */
    static void writeOneFile(Python py, Path dir, int rows, int n, int seed) {
        py.exec(String.format("""
                os.makedirs(%1$s)
                pq.write_table(ids_table(range(%2$d), %3$d, %4$d), %1$s + "/a.parquet")
                """, pyLiteral(dir), rows, n, seed));
    }

    /**
     * Waits up to 10 s for the Parquet tasks' Arrow memory to be released, then asserts it is: the
     * model's objects of the inputs may go last (a {@code PythonException} keeps the traceback, and
     * so the failing call's inputs, until collected).
     */
    static void assertEveryArrowBufferReleased(Python py) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (ParquetTask.allocatedBytes() != 0 && System.nanoTime() < deadline) {
            System.gc();
            try (PyObject ignored = py.eval("__import__('gc').collect()")) {
                Thread.sleep(20);
            }
        }
        assertThat(ParquetTask.allocatedBytes()).as("bytes the Parquet tasks still hold").isZero();
    }

    /** {@return {@code s} (a path, say) as a Python string literal} */
    static String pyLiteral(Object s) {
        return "'" + s.toString().replace("\\", "\\\\").replace("'", "\\'") + "'";
    }

    /** {@return the Python the tests embed: the reactor's .venv, from the POM} */
    static String python() {
        String p = System.getProperty("dlpack4j.python");
        if (p == null) {
            throw new IllegalStateException("the tests need -Ddlpack4j.python (the POM sets it to .venv/bin/python)");
        }
        return p;
    }

    private static SparkSession session(String wanted) {
        if (session != null && wanted.equals(master)) {
            return session;
        }
        stop();
        SparkConf conf = new SparkConf()
                .setMaster(wanted)
                .setAppName("dlpack4j-spark tests")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.sql.shuffle.partitions", "2")
                .set("spark.sql.adaptive.enabled", "false");
        if (wanted.startsWith("local-cluster")) {
            // The executors unpack Arrow's dataset library (76 MB) into their temporary directory, and
            // one killed by a test leaves it there: target/, not /tmp.
            Path tmp = Path.of(System.getenv("SPARK_HOME")).resolveSibling("executor-tmp");
            try {
                Files.createDirectories(tmp);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            conf.set("spark.executor.extraJavaOptions", "-Djava.io.tmpdir=" + tmp);
        }
        ExecutorPython.configure(conf, python());
        if (wanted.startsWith("local-cluster")) {
            ExecutorPython.warmUp(conf, "torch"); // each executor JVM starts Python and torch as it starts
            List<String> directories = sparkHome();
            conf.set("spark.executor.extraClassPath", String.join(File.pathSeparator, directories))
                    .set("spark.executor.memory", "1g")
                    // No waiting for a locality that one machine does not have (3 s per task set).
                    .set("spark.locality.wait", "0")
                    // Every executor registered before the first task, so that both get tasks.
                    .set("spark.scheduler.minRegisteredResourcesRatio", "1.0")
                    .set("spark.scheduler.maxRegisteredResourcesWaitingTime", "60s");
        }
        session = SparkSession.builder().config(conf).getOrCreate();
        master = wanted;
        return session;
    }

    /** Stops the running session, if any. */
    static synchronized void stop() {
        if (session != null) {
            session.stop();
            session = null;
            master = null;
        }
    }

    /**
     * Fills SPARK_HOME (the POM points it into target/) the way the Workers' launcher reads it: a
     * RELEASE file and jars/ holding a link to each jar of this JVM's class path. {@return the class
     * path's directories} (the modules' classes), which reach the executors as their extra class path.
     */
    private static List<String> sparkHome() {
        Path home = Path.of(System.getenv("SPARK_HOME"));
        Path jars = home.resolve("jars");
        List<String> directories = new ArrayList<>();
        try {
            Files.createDirectories(jars);
            Files.writeString(home.resolve("RELEASE"), "dlpack4j-spark tests: the test class path\n");
            for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
                Path p = Path.of(entry).toAbsolutePath();
                if (Files.isDirectory(p)) {
                    directories.add(p.toString());
                } else if (entry.endsWith(".jar")) {
                    Path link = jars.resolve(p.getFileName());
                    Files.deleteIfExists(link);
                    Files.createSymbolicLink(link, p);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return directories;
    }
}
