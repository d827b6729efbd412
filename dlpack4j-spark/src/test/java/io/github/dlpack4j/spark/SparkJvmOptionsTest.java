package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;

import org.apache.spark.SparkConf;
import org.apache.spark.launcher.JavaModuleOptions;
import org.junit.jupiter.api.Test;

/** The JVM options that drivers and executors need, and the settings that give them to executors. */
class SparkJvmOptionsTest {
    @Test
    void the_test_jvm_runs_with_every_option_of_sparks_launcher_that_the_pom_lists() {
        assertThat(ManagementFactory.getRuntimeMXBean().getInputArguments())
                .as("the POM's spark.jvm.options against JavaModuleOptions of this Spark")
                .containsAll(java.util.List.of(JavaModuleOptions.defaultModuleOptionArray()))
                .contains(ExecutorPython.NATIVE_ACCESS);
    }

    @Test
    void a_drivers_options_are_sparks_own_and_native_access() {
        assertThat(ExecutorPython.jvmOptions()).containsAll(java.util.List.of(JavaModuleOptions.defaultModuleOptionArray()))
                .containsOnlyOnce(ExecutorPython.NATIVE_ACCESS);
    }

    @Test
    void configure_names_the_executors_python_and_adds_native_access_to_their_options_once() {
        SparkConf conf = new SparkConf(false).set("spark.executor.extraJavaOptions", "-Xss4m");

        ExecutorPython.configure(ExecutorPython.configure(conf, "/opt/venv/bin/python"), "/opt/venv/bin/python");

        assertThat(conf.get("spark.executorEnv.DLPACK4J_PYTHON")).isEqualTo("/opt/venv/bin/python");
        assertThat(conf.get("spark.executor.extraJavaOptions")).isEqualTo("-Xss4m --enable-native-access=ALL-UNNAMED");
        assertThat(scala.jdk.javaapi.CollectionConverters.asJava(conf.getExecutorEnv()))
                .extracting(kv -> kv._1() + "=" + kv._2()).contains("DLPACK4J_PYTHON=/opt/venv/bin/python");
    }

    @Test
    void warm_up_adds_its_plugin_to_the_plugins_there_once_and_names_the_modules() {
        SparkConf conf = new SparkConf(false).set("spark.plugins", "com.example.Metrics");

        ExecutorPython.warmUp(ExecutorPython.warmUp(conf, "numpy"), "torch", "numpy");

        assertThat(conf.get("spark.plugins")).isEqualTo("com.example.Metrics," + ExecutorWarmup.class.getName());
        assertThat(conf.get(ExecutorWarmup.MODULES)).isEqualTo("torch,numpy");
    }
}
