package io.github.dlpack4j.python.interpreter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.python.Python;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Each set-up problem gets an error that names the fix. */
class SetupErrorsTest {
    @TempDir
    Path dir;

    /** A stand-in "python" that reports the given configuration, as the real one would. */
    private Path fakePython(String... lines) throws Exception {
        Path script = dir.resolve("python");
        StringBuilder sb = new StringBuilder("#!/bin/sh\n");
        for (String l : lines) {
            sb.append("echo '").append(l).append("'\n");
        }
        Files.writeString(script, sb);
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        return script;
    }

    @Test
    void aMissingExecutableNamesTheSettingToFix() {
        assertThatThrownBy(() -> PythonLocator.locate("/nonexistent/bin/python3"))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("no Python executable '/nonexistent/bin/python3'")
                .hasMessageContaining("-Ddlpack4j.python").hasMessageContaining("DLPACK4J_PYTHON");
    }

    @Test
    void aPythonWithoutSharedLibraryIsRefusedWithTheBuildFlagToUse() throws Exception {
        Path p = fakePython("version=3.11", "executable=/x/python", "shared=False", "LIBDIR=" + dir,
                "INSTSONAME=libpython3.11.a", "LDLIBRARY=libpython3.11.a", "MULTIARCH=");
        assertThatThrownBy(() -> PythonLocator.locate(p.toString())).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("without a shared libpython").hasMessageContaining("--enable-shared");
    }

    @Test
    void anInterpreterOlderThan310IsRefused() throws Exception {
        Path p = fakePython("version=3.9", "executable=/x/python", "shared=True");
        assertThatThrownBy(() -> PythonLocator.locate(p.toString())).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Python 3.9").hasMessageContaining("3.10 or newer");
    }

    @Test
    void aFreeThreadedBuildIsRefusedBeforeItsLibraryIsLoadedNamingTheBuildToUse() throws Exception {
        Path p = fakePython("version=3.13", "executable=/x/python3.13t", "shared=True", "gil_disabled=True",
                "LIBDIR=" + dir, "INSTSONAME=libpython3.13t.so.1.0", "LDLIBRARY=libpython3.13t.so", "MULTIARCH=");
        assertThatThrownBy(() -> PythonLocator.locate(p.toString())).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("free-threaded build").hasMessageContaining("python3.13, not python3.13t");
    }

    @Test
    void theProjectVenvIsFoundWithItsSharedLibrary() {
        PythonLocator l = PythonLocator.locate(System.getProperty("dlpack4j.python"));
        assertThat(l.library().getFileName().toString()).startsWith("libpython3.");
        assertThat(l.path()).anyMatch(s -> s.contains(".venv"));
    }

    @Test
    void aJvmWithoutNativeAccessGetsTheFlagToAdd() throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), StartWithoutNativeAccess.class.getName()));
        File log = Files.createTempFile(dir, "out", ".log").toFile();
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log).start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String out = Files.readString(log.toPath(), StandardCharsets.UTF_8);
        assertThat(out).contains("--enable-native-access=ALL-UNNAMED");
        assertThat(p.exitValue()).isEqualTo(7);
    }

    /** Run in a child JVM without {@code --enable-native-access}. */
    public static final class StartWithoutNativeAccess {
        public static void main(String[] args) {
            try {
                Python.start();
            } catch (IllegalStateException e) {
                System.out.println(e.getMessage());
                System.exit(7);
            }
        }
    }
}
