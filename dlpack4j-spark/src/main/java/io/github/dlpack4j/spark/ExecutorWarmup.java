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
 * set) and {@value #ARROW} ({@code true} unless set; with it, an executor whose interpreter has
 * pyarrow imports {@code pyarrow.parquet} too, the Parquet route's writer). A module that fails to import is left for
 * the first task to import again, which then reports the error as the task's.
 */
public final class ExecutorWarmup implements SparkPlugin {
    /** The setting that lists the modules to import, comma-separated. */
    public static final String MODULES = "spark.dlpack4j.warmup.modules";
    /** The setting that says whether to load Arrow's dataset library ({@code true} or {@code false}). */
    public static final String ARROW = "spark.dlpack4j.warmup.arrow";

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
                Thread.ofPlatform().name("dlpack4j executor warm-up").daemon().start(() -> warmUp(modules, arrow));
            }
        };
    }

    private static void warmUp(List<String> modules, boolean arrow) {
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
            if (arrow) {
                ParquetTask.hasPyarrow(); // imports pyarrow.parquet, the Parquet route's writer, where it is; the answer kept
            }
        } catch (RuntimeException | Error e) {
            // the first task starts Python or imports the module again, and fails with the error then
        }
    }
}
