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

/**
 * A main class of these tests run in a fresh JVM, with this JVM's class path and its Python and DJL
 * settings: for what one process can do only once (load a libtorch) or must start with (an
 * environment variable that glibc reads).
 */
final class ForkedJvm {
    private ForkedJvm() {}

    /**
     * Runs {@code main} with {@code args} and the variables {@code env} added to this process's
     * environment, asserts that it exits with status 0 within two minutes, and returns its
     * {@code step: outcome} lines as a map (a later line of a step wins).
     *
     * @param log the file its output goes to
     */
    static Map<String, String> steps(Path log, Map<String, String> env, Class<?> main, String... args)
            throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path")));
        for (String p : List.of("dlpack4j.python", "ai.djl.offline", "ENGINE_CACHE_DIR", "DJL_CACHE_DIR")) {
            if (System.getProperty(p) != null) {
                cmd.add("-D" + p + "=" + System.getProperty(p));
            }
        }
        cmd.add(main.getName());
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        Process p = pb.start();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("the JVM ended").isTrue();
        String out = Files.readString(log);
        assertThat(p.exitValue()).as("exit status; output:\n" + out).isZero();
        return out.lines().filter(l -> l.matches("^[a-z ]+: .*"))
                .collect(Collectors.toMap(l -> l.substring(0, l.indexOf(':')), l -> l.substring(l.indexOf(':') + 2),
                        (a, b) -> b));
    }
}
