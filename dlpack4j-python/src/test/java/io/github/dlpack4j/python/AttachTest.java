package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Python (Debian's python3 with JPype, installed by scripts/test) starts the JVM, and Java joins
 * that interpreter with {@link Python#attach()}.
 */
class AttachTest {
    private static final String HOST_PYTHON = "/usr/bin/python3";

    @Test
    void javaStartedByJpypeAttachesToTheHostInterpreterWhichExitsCleanlyHoldingJavaMemory() throws Exception {
        String out = runHost("atexit");
        assertThat(out).as("JPype host output (is python3-jpype installed? scripts/test installs it)")
                .contains("RESULT " + HOST_PYTHON + " 45").contains("MARKER 42").contains("EXPORTS 6.0 7")
                .endsWith("exit 0");
    }

    @Test
    void anExplicitJpypeShutdownLeavesPythonUsingJavaMemorySafely() throws Exception {
        String out = runHost("explicit");
        assertThat(out).contains("EXPORTS 6.0 7").contains("AFTER SHUTDOWN 6.0").endsWith("exit 0");
    }

    /** Runs attach_from_jpype.py with {@code how} it ends; its output, then "exit N". */
    private static String runHost(String how) throws Exception {
        Path script = Path.of(AttachTest.class.getResource("/attach_from_jpype.py").toURI());
        Path libjvm = Path.of(System.getProperty("java.home"), "lib", "server", "libjvm.so");
        Path log = Files.createTempFile("dlpack4j-attach", ".log");
        Process p = new ProcessBuilder(HOST_PYTHON, script.toString(), libjvm.toString(),
                System.getProperty("java.class.path"), how).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        boolean finished = p.waitFor(120, TimeUnit.SECONDS);
        if (!finished) {
            p.destroyForcibly();
        }
        String out = Files.readString(log, StandardCharsets.UTF_8);
        Files.delete(log);
        assertThat(finished).as("the JPype host finished: %s", out).isTrue();
        return out + "exit " + p.exitValue();
    }
}
