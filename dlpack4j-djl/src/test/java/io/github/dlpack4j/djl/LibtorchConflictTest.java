package io.github.dlpack4j.djl;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * DJL's libtorch 2.7.1 and pip's torch 2.13 in one process, in both orders, each in a fresh JVM:
 * the second to load fails with an exception (never a crash), the first keeps working, numpy is not
 * affected, and {@link DjlTensors#checkLibtorch()} names the conflict where DJL would fail.
 */
class LibtorchConflictTest {
    @TempDir
    Path dir;

    private Map<String, String> run(String order) throws IOException, InterruptedException {
        return ForkedJvm.steps(dir.resolve(order + ".log"), Map.of(), BothLibtorchs.class, order);
    }

    @Test
    void with_djl_first_import_torch_fails_with_an_ImportError_and_djl_and_numpy_keep_working() throws Exception {
        Map<String, String> steps = run("djl-first");
        assertThat(steps.get("djl")).isEqualTo("ok 6.0");
        assertThat(steps.get("check")).isEqualTo("ok");
        assertThat(steps.get("torch")).startsWith("failed PythonException").contains("ImportError");
        assertThat(steps.get("numpy")).isEqualTo("3");
        assertThat(steps.get("djl again")).isEqualTo("ok 6.0");
        assertThat(steps.get("torch again")).startsWith("failed PythonException").contains("ImportError");
        assertThat(steps.get("end")).isEqualTo("alive");
    }

    @Test
    void with_torch_first_checkLibtorch_names_the_conflict_and_djls_engine_fails_to_load() throws Exception {
        Map<String, String> steps = run("torch-first");
        assertThat(steps.get("torch")).isEqualTo("ok 6");
        assertThat(steps.get("check")).startsWith("failed IllegalStateException")
                .contains("another libtorch is loaded in this process, from ").contains("torch/lib")
                .contains("Use one libtorch per process");
        assertThat(steps.get("djl")).startsWith("failed EngineException / UnsatisfiedLinkError")
                .contains("libtorch_cpu.so").contains("undefined symbol");
        assertThat(steps.get("numpy")).isEqualTo("3");
        assertThat(steps.get("torch again")).isEqualTo("ok 6");
        assertThat(steps.get("end")).isEqualTo("alive");
    }
}
