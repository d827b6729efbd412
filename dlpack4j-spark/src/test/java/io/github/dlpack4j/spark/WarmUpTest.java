package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

import org.apache.spark.SparkConf;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The executors' warm-up: the models of {@link BatchInference#warmUp} built as the executor starts
 * (in local mode the executor is this JVM), found built by the first task; the settings it writes;
 * the Java agent's entry point ({@link ExecutorWarmup#premain}).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class WarmUpTest {
    /** A model that counts its loads in a Python global of this JVM's interpreter. */
    private static final String COUNTED = """
            import builtins, torch

            def load():
                builtins.warm_up_test_loads = getattr(builtins, "warm_up_test_loads", 0) + 1
                return lambda x: torch.from_dlpack(x) * 3
            """;

    @Test
    void warm_up_adds_the_plugin_and_the_model_once_and_keeps_the_modules_and_plugins_already_set() {
        BatchInference a = inference("a");
        BatchInference b = inference("b");
        SparkConf conf = new SparkConf(false).set("spark.plugins", "com.example.Other")
                .set(ExecutorWarmup.MODULES, "numpy");

        a.warmUp(conf);
        a.warmUp(conf);
        b.warmUp(conf);

        assertThat(conf.get("spark.plugins")).isEqualTo("com.example.Other," + ExecutorWarmup.class.getName());
        assertThat(conf.get(ExecutorWarmup.MODULES)).isEqualTo("numpy");
        List<String> models = Arrays.asList(conf.get(ExecutorWarmup.MODELS).split(","));
        assertThat(models).hasSize(2);
        BatchInference.WarmUpModel first = BatchInference.WarmUpModel.decode(models.get(0), getClass().getClassLoader());
        assertThat(first.model().key()).isEqualTo(a.model().key());
        assertThat(first.outputs()).containsExactly(TensorColumn.scalar("y", DataTypes.DoubleType));
        SparkConf fresh = new SparkConf(false);
        a.warmUp(fresh);
        assertThat(fresh.get(ExecutorWarmup.MODULES)).as("the modules when none were set").isEqualTo("torch");
    }

    @Test
    void a_model_given_to_the_warm_up_is_built_as_the_executor_starts_and_its_first_task_builds_it_no_more()
            throws InterruptedException {
        Sparks.stop(); // a session of this test's own settings
        Python py = ExecutorPython.get();
        BatchInference counted = BatchInference.builder().input("x").passThrough("id")
                .model(ExecutorModel.fromSource("counted", COUNTED, "load"))
                .output("y", DataTypes.DoubleType).build();
        SparkConf conf = new SparkConf().setMaster("local[2]").setAppName("dlpack4j-spark warm-up test")
                .set("spark.ui.enabled", "false").set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1");
        ExecutorPython.configure(conf, Sparks.python());
        counted.warmUp(conf);
        SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (loads(py) == 0 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(loads(py)).as("loads by the warm-up, before any task").isEqualTo(1);

            Dataset<Row> in = spark.range(10).selectExpr("id", "cast(id as double) as x");
            List<Row> out = counted.transform(in).collectAsList();

            assertThat(out).hasSize(10).allSatisfy(r -> assertThat(r.getDouble(1)).isEqualTo(r.getLong(0) * 3.0));
            assertThat(loads(py)).as("loads after the job").isEqualTo(1);
        } finally {
            spark.stop();
        }
    }

    @Test
    void the_agent_imports_its_modules_on_a_thread_of_its_own_and_leaves_arrow_out_when_told()
            throws InterruptedException {
        Python py = ExecutorPython.get(); // the tests' interpreter; the agent's thread finds it started
        ExecutorWarmup.premain("colorsys, json;arrow=false");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        boolean imported = false;
        while (!imported && System.nanoTime() < deadline) {
            try (PyObject has = py.eval("__import__('sys').modules.get('colorsys') is not None")) {
                imported = has.str().equals("True");
            }
            Thread.sleep(10);
        }
        assertThat(imported).as("colorsys imported by the agent's thread").isTrue();
        assertThat(ExecutorPython.warmUpStarted).isPositive();
    }

    private static long loads(Python py) {
        try (PyObject n = py.eval("getattr(__import__('builtins'), 'warm_up_test_loads', 0)")) {
            return n.asLong();
        }
    }

    private static BatchInference inference(String name) {
        return BatchInference.builder().input("x").passThrough("id")
                .model(ExecutorModel.fromSource(name, COUNTED, "load")).output("y", DataTypes.DoubleType).build();
    }
}
