package io.github.dlpack4j.spark;

import java.util.Arrays;
import java.util.List;
import java.util.Map;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

import org.apache.spark.SparkConf;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * A Spark plugin that starts each executor's embedded Python as the executor starts, imports the
 * modules its models will need, and loads Arrow's dataset library for the Parquet route, all on a
 * thread of its own (and on the driver, Arrow's library, with which the Parquet route reads the
 * first file's schema): the executor registers with the driver meanwhile, and its first task finds
 * them ready instead of spending seconds on them (Python and torch took 1-5 s, Arrow's library
 * 0.8-1.9 s, in the example's executors). {@link ExecutorPython#warmUp} turns it on:
 *
 * {@snippet :
 * SparkConf conf = new SparkConf();
 * ExecutorPython.configure(conf, "/opt/venv/bin/python");
 * ExecutorPython.warmUp(conf, "torch");      // spark.plugins gains this class
 * }
 *
 * <p>Settings: {@value #MODULES} (the modules to import, comma-separated; {@code torch} unless
 * set), {@value #ARROW} ({@code true} unless set; with it, an executor whose interpreter has
 * pyarrow imports {@code pyarrow.parquet} too, the Parquet route's writer) and {@value #MODELS}
 * (models to build, after the imports: {@link BatchInference#warmUp}). A module that fails to
 * import, or a model that fails to build, is left for the first task to try again, which then
 * reports the error as the task's.
 *
 * <p>The plugin starts when Spark makes the executor, after the executor's JVM has started,
 * fetched the application's settings and registered with the driver (2-3 s in the example's
 * executors). Where the jar is at a path known on every worker, the same jar as a Java agent starts
 * Python, the imports and Arrow's library as the JVM starts, before all that ({@link #premain}):
 * {@code spark.executor.extraJavaOptions=-javaagent:/opt/jars/dlpack4j-spark.jar=torch}; the
 * plugin then finds them started and builds the models.
 */
public final class ExecutorWarmup implements SparkPlugin {
    /** The setting that lists the modules to import, comma-separated. */
    public static final String MODULES = "spark.dlpack4j.warmup.modules";
    /** The setting that says whether to load Arrow's dataset library ({@code true} or {@code false}). */
    public static final String ARROW = "spark.dlpack4j.warmup.arrow";
    /**
     * The setting that holds the models to build, as {@link BatchInference#warmUp} writes them
     * (comma-separated, each a serialized model and its outputs in Base64).
     */
    public static final String MODELS = "spark.dlpack4j.warmup.models";

    /** For Spark, which makes the plugin by reflection. */
    public ExecutorWarmup() {
    }

    /**
     * {@return on the driver, a plugin that loads Arrow's dataset library as the application starts,
     * unless {@value #ARROW} is {@code false}: the driver reads the first file's schema with it}
     */
    @Override
    public DriverPlugin driverPlugin() {
        return new DriverPlugin() {
            @Override
            public Map<String, String> init(org.apache.spark.SparkContext sc, PluginContext context) {
                if (context.conf().getBoolean(ARROW, true)) {
                    ParquetTask.startArrowLoad();
                }
                return Map.of();
            }
        };
    }

    /**
     * {@return on each executor, a plugin that starts the warm-up's thread as the executor starts}
     */
    @Override
    public ExecutorPlugin executorPlugin() {
        return new ExecutorPlugin() {
            @Override
            public void init(PluginContext context, Map<String, String> extraConf) {
                SparkConf conf = context.conf();
                List<String> modules = Arrays.stream(conf.get(MODULES, "torch").split(","))
                        .map(String::strip).filter(m -> !m.isEmpty()).toList();
                boolean arrow = conf.getBoolean(ARROW, true);
                List<String> models = Arrays.stream(conf.get(MODELS, "").split(","))
                        .map(String::strip).filter(m -> !m.isEmpty()).toList();
                // the models' classes (a Loader's) may be the application's: its loader, as Spark set it here
                ClassLoader loader = Thread.currentThread().getContextClassLoader();
                if (ExecutorPython.warmUpStarted < 0) { // not started by the agent
                    ExecutorPython.warmUpStarted = System.currentTimeMillis();
                }
                Thread.ofPlatform().name("dlpack4j executor warm-up").daemon()
                        .start(() -> warmUp(modules, arrow, models, loader));
            }
        };
    }

    /**
     * Starts the warm-up as the JVM starts, when the jar is given to the executors' JVM as a Java
     * agent ({@code -javaagent:PATH/dlpack4j-spark.jar=MODULES}): on a thread of its own, the JVM's
     * Python (the one {@code DLPACK4J_PYTHON} names, as {@link ExecutorPython#configure} sets it for
     * the executors), the modules, {@code pyarrow.parquet} and Arrow's dataset library, while the JVM
     * goes on to start Spark's executor; the plugin, once Spark makes it, finds them started (or
     * waits for them) and builds the models. Nothing else changes: a failed start or import is left
     * to the plugin and the first task, which report it.
     *
     * @param arguments the modules to import, comma-separated ({@code torch} when none), and
     *                  {@code ;arrow=false} to leave out pyarrow and Arrow's library (as {@value #ARROW})
     */
    public static void premain(String arguments) {
        String[] parts = (arguments == null ? "" : arguments).split(";");
        List<String> modules = Arrays.stream(parts[0].split(",")).map(String::strip).filter(m -> !m.isEmpty()).toList();
        boolean arrow = Arrays.stream(parts).skip(1).map(String::strip).noneMatch("arrow=false"::equals);
        List<String> imported = modules.isEmpty() ? List.of("torch") : modules;
        ExecutorPython.warmUpStarted = System.currentTimeMillis();
        Thread.ofPlatform().name("dlpack4j executor warm-up (agent)").daemon()
                .start(() -> warmUp(imported, arrow, List.of(), null));
    }

    private static void warmUp(List<String> modules, boolean arrow, List<String> models, ClassLoader loader) {
        if (arrow) {
            ParquetTask.startArrowLoad();
        }
        try {
            Python python = ExecutorPython.get();
            for (String m : modules) {
                try (PyObject ignored = python.importModule(m)) {
                    // imported: the first task's import finds it in sys.modules
                }
            }
            ExecutorPython.modulesImported = System.currentTimeMillis();
        } catch (RuntimeException | Error e) {
            // the first task starts Python or imports the module again, and fails with the error then
            return;
        }
        // The models before pyarrow: a task needs its model as it starts, the writer once it has read a batch.
        for (String m : models) {
            try {
                BatchInference.WarmUpModel model = BatchInference.WarmUpModel.decode(m, loader);
                ExecutorPython.model(model.model(), model.outputs());
            } catch (RuntimeException | Error e) {
                // the first task that needs the model builds it again, and fails with the error then
            }
        }
        if (!models.isEmpty()) {
            ExecutorPython.modelsBuilt = System.currentTimeMillis();
        }
        if (arrow) {
            try {
                ParquetTask.hasPyarrow(); // imports pyarrow.parquet, the Parquet route's writer, where it is; the answer kept
            } catch (RuntimeException | Error e) {
                // the first task of the auto writer asks again
            }
        }
    }
}
