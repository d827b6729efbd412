package io.github.dlpack4j.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.python.Python;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.launcher.JavaModuleOptions;

/**
 * The embedded Python of an executor JVM, and how executors find theirs.
 *
 * <p>{@link #get()} starts the JVM's one interpreter the first time a task asks, from whichever
 * task thread that is (the others wait for it), and gives every later caller the same one. The
 * interpreter is the Python executable named by the system property {@code dlpack4j.python}, else
 * by the Spark setting {@value #EXECUTOR_ENV} (which {@link #configure} sets; on an executor it is
 * also the variable {@code DLPACK4J_PYTHON}, so the two agree), else by {@code DLPACK4J_PYTHON},
 * else {@code python3}: see {@link Python#start()}. In {@code local[N]} mode the executor is the
 * driver's JVM, and its interpreter the driver's.
 *
 * <p>Each model runs through dlpack4j-model's runtime ({@link PythonModel}):
 * the first task that needs it builds the runtime's model in this JVM, and every task thread of the
 * JVM shares it. Its model calls run on the runtime's own threads, as many as the executor has task
 * slots ({@link #taskSlots}), without batching (a task's batch is already {@code batchSize} rows),
 * each call holding the GIL only while Python runs (torch lets it go while it computes).
 */
public final class ExecutorPython {
    /** The Spark setting that names the executors' Python: {@code spark.executorEnv.DLPACK4J_PYTHON}. */
    public static final String EXECUTOR_ENV = "spark.executorEnv.DLPACK4J_PYTHON";
    /** The flag without which the JVM refuses dlpack4j's native calls. */
    public static final String NATIVE_ACCESS = "--enable-native-access=ALL-UNNAMED";
    private static final String EXECUTOR_JAVA_OPTIONS = "spark.executor.extraJavaOptions";
    private static final String PYTHON_PROPERTY = "dlpack4j.python";
    /** A local master: {@code local}, {@code local[N]}, {@code local[*]}, {@code local[N,F]}. */
    private static final Pattern LOCAL = Pattern.compile("local(?:\\[(\\d+|\\*)(?:,\\d+)?\\])?");

    private static final Object START = new Object();
    private static volatile Python python;
    private static final ConcurrentHashMap<String, CompletableFuture<PythonModel>> MODELS =
            new ConcurrentHashMap<>();
    /** Nanoseconds this JVM spent starting its Python, and building its models; reported once. */
    private static final long[] startupNanos = new long[2];
    private static boolean startupReported;
    /** When this JVM's Python had started, in epoch milliseconds; -1 until then. */
    private static volatile long pythonStarted = -1;
    /** When this JVM's first task started, in epoch milliseconds; -1 until then. */
    private static volatile long firstTask = -1;
    /** When the warm-up began, had imported its modules and had built its models, in epoch milliseconds. */
    static volatile long warmUpStarted = -1;
    static volatile long modulesImported = -1;
    static volatile long modelsBuilt = -1;

    private ExecutorPython() {
    }

    /**
     * The interpreter of this JVM, started on first use.
     *
     * @return the JVM's one interpreter
     * @throws IllegalStateException naming the fix when the interpreter cannot start (no such
     *                               executable, no shared libpython, the JVM lacks {@link #NATIVE_ACCESS})
     */
    public static Python get() {
        Python p = python;
        if (p != null) {
            return p;
        }
        synchronized (START) {
            if (python == null) {
                String configured = configuredPython();
                if (System.getProperty(PYTHON_PROPERTY) == null && configured != null) {
                    System.setProperty(PYTHON_PROPERTY, configured); // what Python.start() reads first
                }
                long start = System.nanoTime();
                python = Python.start();
                startupNanos[0] = System.nanoTime() - start;
                pythonStarted = System.currentTimeMillis();
            }
            return python;
        }
    }

    /** {@return {@value #EXECUTOR_ENV} of this JVM's Spark, or null} */
    private static String configuredPython() {
        SparkEnv env = SparkEnv.get();
        if (env == null) {
            return null;
        }
        scala.Option<String> value = env.conf().getOption(EXECUTOR_ENV);
        return value.isDefined() ? value.get() : null;
    }

    /**
     * The runtime's model of {@code model} with {@code outputs} declared, built once per JVM (per
     * {@link ExecutorModel} key and outputs) by the first task that asks; task threads that ask
     * meanwhile wait for that build. A build that fails fails those tasks, and the next task tries
     * again. Its callable takes the batch's inputs and then the task's clock ({@link PythonHelpers}).
     *
     * @param model   the model
     * @param outputs the outputs it returns, in order: declared to the runtime by name and dtype, and
     *                by rank (the extents are the task's to check against its batch)
     * @return the runtime's model, shared by every task of this JVM; never close it
     * @throws RuntimeException what the build threw (a {@code PythonException} for a Python error)
     */
    static PythonModel model(ExecutorModel model, List<TensorColumn> outputs) {
        Objects.requireNonNull(model, "model");
        StringBuilder key = new StringBuilder(model.key());
        for (TensorColumn c : outputs) {
            key.append('\0').append(c.name()).append(' ').append(c.dtype()).append(c.isArray() ? " 2" : " 1");
        }
        CompletableFuture<PythonModel> loaded = MODELS.get(key.toString());
        if (loaded == null) {
            CompletableFuture<PythonModel> mine = new CompletableFuture<>();
            loaded = MODELS.putIfAbsent(key.toString(), mine);
            if (loaded == null) {
                try {
                    get();
                    long start = System.nanoTime();
                    PythonModel built = build(model, outputs);
                    synchronized (START) { // before the tasks waiting for it report this JVM's start-up
                        startupNanos[1] += System.nanoTime() - start;
                    }
                    mine.complete(built);
                } catch (RuntimeException | Error e) {
                    MODELS.remove(key.toString(), mine);
                    mine.completeExceptionally(e);
                    throw e;
                }
                return mine.join();
            }
        }
        try {
            return loaded.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw e;
        }
    }

    /** A task starts in this JVM: the first one's start is a step of the JVM's start-up ({@link ExecutorStartup}). */
    static void taskStarted() {
        if (firstTask < 0) {
            synchronized (START) {
                if (firstTask < 0) {
                    firstTask = System.currentTimeMillis();
                }
            }
        }
    }

    /**
     * What this JVM's start-up took, the first time it is asked (by the first task that had its
     * model, which asks as it begins to score), so that a job's metrics count each executor's once.
     *
     * @return the start-up, or null once reported
     */
    static Startup takeStartup() {
        long now = System.currentTimeMillis();
        synchronized (START) {
            if (startupReported || python == null) {
                return null;
            }
            startupReported = true;
            ExecutorStartup times = new ExecutorStartup(ProcessHandle.current().pid(),
                    java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime(), warmUpStarted,
                    pythonStarted, modulesImported, modelsBuilt, ParquetTask.arrowLoaded(),
                    firstTask < 0 ? now : firstTask, now);
            return new Startup(startupNanos[0], startupNanos[1], times);
        }
    }

    /**
     * A JVM's start-up, as its first task reports it.
     *
     * @param pythonNanos the nanoseconds its Python took to start
     * @param modelNanos  the nanoseconds its models took to build, by then
     * @param times       when each step was done
     */
    record Startup(long pythonNanos, long modelNanos, ExecutorStartup times) {
    }

    private static PythonModel build(ExecutorModel model, List<TensorColumn> outputs) {
        Python p = get();
        PythonModel.Builder b = PythonModel.builder()
                .name(model.name()).python(p).workers(taskSlots());
        for (TensorColumn c : outputs) {
            b.output(c.name(), c.dtype(), c.isArray() ? new long[] {-1, -1} : new long[] {-1});
        }
        return model.build(b, p);
    }

    /**
     * The task threads this executor runs at once: {@code spark.executor.cores} (or the N of a
     * {@code local[N]} master, every core for {@code local[*]} or when neither is set) divided by
     * {@code spark.task.cpus}; at least 1.
     *
     * @return the executor's task slots
     */
    static int taskSlots() {
        SparkEnv env = SparkEnv.get();
        int cores = Runtime.getRuntime().availableProcessors();
        int perTask = 1;
        if (env != null) {
            SparkConf conf = env.conf();
            perTask = Math.max(1, conf.getInt("spark.task.cpus", 1));
            Matcher local = LOCAL.matcher(conf.get("spark.master", ""));
            if (conf.contains("spark.executor.cores")) {
                cores = conf.getInt("spark.executor.cores", cores);
            } else if (local.matches()) {
                cores = local.group(1) == null ? 1 : local.group(1).equals("*") ? cores : Integer.parseInt(local.group(1));
            }
        }
        return Math.max(1, cores / perTask);
    }

    /**
     * Sets what executors need to run dlpack4j: {@value #EXECUTOR_ENV} to {@code pythonExecutable},
     * and {@link #NATIVE_ACCESS} in {@code spark.executor.extraJavaOptions} (kept with the options
     * already there). Spark 4.2 gives executors that flag itself too, among its
     * {@link JavaModuleOptions}; setting it here keeps it when those change. Idempotent.
     *
     * @param conf             the application's configuration, changed in place
     * @param pythonExecutable the Python each executor embeds (for example a venv's {@code bin/python}),
     *                         present at that path on every worker
     * @return {@code conf}
     */
    public static SparkConf configure(SparkConf conf, String pythonExecutable) {
        Objects.requireNonNull(conf, "conf");
        Objects.requireNonNull(pythonExecutable, "pythonExecutable");
        conf.set(EXECUTOR_ENV, pythonExecutable);
        String options = conf.get(EXECUTOR_JAVA_OPTIONS, "").strip();
        if (!Arrays.asList(options.split("\\s+")).contains(NATIVE_ACCESS)) {
            conf.set(EXECUTOR_JAVA_OPTIONS, options.isEmpty() ? NATIVE_ACCESS : options + " " + NATIVE_ACCESS);
        }
        return conf;
    }

    /**
     * Has each executor start its Python, import {@code modules} and load Arrow's dataset library
     * as it starts, before its first task ({@link ExecutorWarmup}): adds the plugin to
     * {@code spark.plugins} (kept with the plugins already there) and sets
     * {@value ExecutorWarmup#MODULES}. Idempotent.
     *
     * @param conf    the application's configuration, changed in place
     * @param modules the Python modules the models import (e.g. {@code torch}); none for only Python and Arrow
     * @return {@code conf}
     */
    public static SparkConf warmUp(SparkConf conf, String... modules) {
        Objects.requireNonNull(conf, "conf");
        String plugin = ExecutorWarmup.class.getName();
        String plugins = conf.get("spark.plugins", "").strip();
        if (!Arrays.asList(plugins.split("\\s*,\\s*")).contains(plugin)) {
            conf.set("spark.plugins", plugins.isEmpty() ? plugin : plugins + "," + plugin);
        }
        conf.set(ExecutorWarmup.MODULES, String.join(",", modules));
        return conf;
    }

    /**
     * The JVM options a driver started by hand (without {@code spark-submit}) needs on its command
     * line: Spark's own for Java 17 and later ({@link JavaModuleOptions#defaultModuleOptionArray()},
     * which {@code spark-submit} adds), and {@link #NATIVE_ACCESS}.
     *
     * @return the options, one per element
     */
    public static List<String> jvmOptions() {
        List<String> options = new ArrayList<>(Arrays.asList(JavaModuleOptions.defaultModuleOptionArray()));
        if (!options.contains(NATIVE_ACCESS)) {
            options.add(NATIVE_ACCESS);
        }
        return List.copyOf(options);
    }
}
