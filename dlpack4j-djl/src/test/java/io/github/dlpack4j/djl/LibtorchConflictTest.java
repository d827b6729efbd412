package io.github.dlpack4j.djl;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
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
        Path log = dir.resolve(order + ".log");
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path")));
        for (String p : List.of("dlpack4j.python", "ai.djl.offline", "ENGINE_CACHE_DIR", "DJL_CACHE_DIR")) {
            if (System.getProperty(p) != null) {
                cmd.add("-D" + p + "=" + System.getProperty(p));
            }
        }
        cmd.add(BothLibtorchs.class.getName());
        cmd.add(order);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("the JVM ended").isTrue();
        String out = Files.readString(log);
        assertThat(p.exitValue()).as("exit status; output:\n" + out).isZero();
        return out.lines().filter(l -> l.matches("^[a-z ]+: .*"))
                .collect(Collectors.toMap(l -> l.substring(0, l.indexOf(':')), l -> l.substring(l.indexOf(':') + 2),
                        (a, b) -> b));
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
