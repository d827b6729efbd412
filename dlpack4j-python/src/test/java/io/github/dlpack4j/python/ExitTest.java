package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The JVM exits promptly after Python imported torch and numpy. A JVM that still held the GIL at
 * exit used to hang for ever, because torch's exit-time destructors wait for it; a GIL scope still
 * open when the JVM exits now ends the process at once, with the JVM's exit code. With ctypes peers
 * instead, on every supported CPython ({@code any-cpython}).
 */
class ExitTest {
    private static ProcessBuilder command(List<String> jvmFlags, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmFlags);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add("-Ddlpack4j.python=" + System.getProperty("dlpack4j.python"));
        cmd.add(ExitScenarios.class.getName());
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectErrorStream(true);
    }

    @ParameterizedTest(name = "{0} exits with {1}")
    @CsvSource({"return, 0", "exit, 3", "uncaught-thread, 0", "uncaught-main, 1", "pending-deleters, 0"})
    void theJvmExitsWithinSecondsAfterImportingTorchAndNumpy(String scenario, int exitCode) throws Exception {
        assertExitsWithinSeconds(exitCode, scenario);
    }

    @ParameterizedTest(name = "{0} exits with {1}")
    @CsvSource({"return, 0", "exit, 3"})
    void theJvmExitsWithItsOwnCodeWhilePythonHoldsNumpyTorchAndJaxViewsOfJavaTensors(String scenario, int exitCode)
            throws Exception {
        assertExitsWithinSeconds(exitCode, scenario, "views");
    }

    @Test
    void aDlpack4jTensorMadeInAShutdownHookExportsItsOwnTensor() throws Exception {
        File log = File.createTempFile("dlpack4j-exit", ".log");
        log.deleteOnExit();
        Process p = command(List.of("--enable-native-access=ALL-UNNAMED"), "exports-in-a-shutdown-hook")
                .redirectOutput(log).start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("child JVM finished within 60 s").isTrue();
        String out = Files.readString(log.toPath());
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains("wrong exports in a shutdown hook: 0 of 100");
    }

    @ParameterizedTest(name = "{0} exits with {1}")
    @Tag("any-cpython")
    @CsvSource({"return, 0", "exit, 3", "uncaught-thread, 0", "uncaught-main, 1"})
    void theJvmExitsWithinSecondsWithCtypesTensorsLeftOpen(String scenario, int exitCode) throws Exception {
        assertExitsWithinSeconds(exitCode, scenario, "ctypes");
    }

    /**
     * Runs a scenario that ends no GIL hold early, and checks that the child ends with
     * {@code exitCode} within seconds, its native exit handlers run: no thread was left counted as
     * holding the GIL (a Java function that threw included), and nothing crashed.
     */
    private static void assertExitsWithinSeconds(int exitCode, String... args) throws Exception {
        long start = System.nanoTime();
        File log = File.createTempFile("dlpack4j-exit", ".log");
        log.deleteOnExit();
        Process p = command(List.of("--enable-native-access=ALL-UNNAMED"), args).redirectOutput(log).start();
        boolean finished = p.waitFor(60, TimeUnit.SECONDS);
        if (!finished) {
            p.destroyForcibly();
        }
        assertThat(finished).as("child JVM finished within 60 s").isTrue();
        String out = Files.readString(log.toPath());
        assertThat(p.exitValue()).as(out).isEqualTo(exitCode);
        assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start)).as("seconds").isLessThan(30);
        assertThat(out).doesNotContain("dlpack4j: the JVM exits while").doesNotContain("A fatal error has been detected");
    }

    @ParameterizedTest(name = "{0} exits with {1}")
    @CsvSource({"exit-in-scope, 4, main", "daemon-in-scope, 0, scope-holder"})
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aGilScopeStillOpenWhenTheJvmExitsEndsTheProcessWithinSecondsWithItsExitCode(
            String scenario, int exitCode, String holder) throws Exception {
        assertThat(exitAfterLeaving(scenario, exitCode)).anySatisfy(line -> assertThat(line)
                .contains("thread \"" + holder + "\" (inside Python.withGil) holds the GIL"));
    }

    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aDaemonThreadCallingPythonInALoopDoesNotHangTheExit() throws Exception {
        exitAfterLeaving("daemon-calling", 0);
    }

    @ParameterizedTest(name = "{0} exits with {1}")
    @CsvSource({"python-thread-in-function-exit, 3", "python-thread-in-function-return, 0"})
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aThreadThatPythonStartedBlockedInAJavaFunctionWhenTheJvmExitsEndsTheProcessWithinSecondsWithItsExitCode(
            String scenario, int exitCode) throws Exception {
        List<String> lines = exitAfterLeaving(scenario, exitCode);
        assertThat(lines).anySatisfy(line -> assertThat(line)
                .contains("thread " + holder(lines) + " (in a Java function that Python called, at ")
                .contains("ExitScenarios.java:")
                .contains(") holds the GIL"));
    }

    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aThreadThatPythonStartedAlternatingPythonWorkAndJavaCallsDoesNotHangTheExit() throws Exception {
        List<String> lines = exitAfterLeaving("python-thread-calling", 0);
        assertThat(lines).anySatisfy(line -> assertThat(line).contains("thread " + holder(lines) + " ("));
    }

    /** The name of the thread, quoted, that the scenario printed from inside its Java function. */
    private static String holder(List<String> lines) {
        return lines.stream().filter(l -> l != null && l.startsWith("in a Java function on ")).findFirst()
                .orElseThrow().substring("in a Java function on ".length());
    }

    /**
     * Runs {@code scenario} and checks that the child ends with {@code exitCode} within 10 s of
     * printing {@link ExitScenarios#LEAVING}, its C stdio written out; returns all it printed.
     */
    private static List<String> exitAfterLeaving(String scenario, int exitCode) throws Exception {
        Process p = command(List.of("--enable-native-access=ALL-UNNAMED"), scenario).start();
        BufferedReader out = p.inputReader(StandardCharsets.UTF_8);
        List<String> lines = new ArrayList<>();
        String line;
        do {
            line = out.readLine();
            lines.add(line);
        } while (line != null && !line.equals(ExitScenarios.LEAVING));
        assertThat(line).as("the scenario reached its end").isNotNull();
        boolean finished = p.waitFor(10, TimeUnit.SECONDS);
        if (!finished) {
            p.destroyForcibly();
        }
        assertThat(finished).as("the process ended within 10 s of leaving").isTrue();
        assertThat(p.exitValue()).isEqualTo(exitCode);
        List<String> after = out.lines().toList();
        assertThat(after).as("printed after leaving").contains(ExitScenarios.C_STDIO_LINE);
        lines.addAll(after);
        return lines;
    }
}
