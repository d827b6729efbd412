package io.github.dlpack4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.dlpack4j.cli.DoctorReport.Library;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.MatchResult;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The built jars in child JVMs: the module path, the executable jar, and broken set-ups. */
class CommandLineIT {
    static final Path TARGET = Path.of(System.getProperty("dlpack4j.cli.target"));
    static final String JAVA = Path.of(System.getProperty("java.home"), "bin", "java").toString();

    @TempDir
    Path dir;

    record Run(int exitCode, String out, String err) {}

    private Run run(Map<String, String> env, String... command) throws Exception {
        File out = dir.resolve("out.txt").toFile();
        File err = dir.resolve("err.txt").toFile();
        ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(out).redirectError(err);
        pb.environment().remove("DLPACK4J_PYTHON");
        pb.environment().putAll(env);
        Process p = pb.start();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("finished in time").isTrue();
        return new Run(p.exitValue(), Files.readString(out.toPath(), StandardCharsets.UTF_8),
                Files.readString(err.toPath(), StandardCharsets.UTF_8));
    }

    /** {@code java -jar target/dlpack4j.jar ARGS}: the class path, native access from the manifest. */
    private Run jar(Map<String, String> env, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(JAVA, "-jar", TARGET.resolve("dlpack4j.jar").toString()));
        cmd.addAll(List.of(args));
        return run(env, cmd.toArray(String[]::new));
    }

    private static void assertOneClearLine(Run r, String expected) {
        assertThat(r.exitCode()).as(r.out() + r.err()).isEqualTo(1);
        assertThat(r.out() + r.err()).contains(expected).doesNotContain("\tat ", "Exception in thread");
    }

    @Test
    void theDemoRunsOnTheModulePathWithNativeAccessForTheTwoModules() throws Exception {
        String modulePath = TARGET.resolve("dlpack4j-cli-" + Main.projectVersion() + ".jar") + File.pathSeparator + TARGET.resolve("lib");
        Run r = run(Map.of("DLPACK4J_PYTHON", System.getProperty("dlpack4j.python")), JAVA,
                "--enable-native-access=io.github.dlpack4j.core,io.github.dlpack4j.python",
                "-p", modulePath, "-m", "io.github.dlpack4j.cli", "demo");
        assertThat(r.exitCode()).as(r.err()).isZero();
        assertThat(r.err()).doesNotContain("WARNING"); // no restricted-method warning: access was granted
        String numpy = r.out().substring(r.out().indexOf("A NumPy array in Java"));
        List<String> addresses = Pattern.compile("0x[0-9a-f]+").matcher(numpy.substring(0, numpy.indexOf("route")))
                .results().map(MatchResult::group).toList();
        assertThat(addresses).hasSize(2).containsOnly(addresses.get(0));
        assertThat(numpy).contains("[ 3.,  4., 42.]]");
    }

    /** ONNX Runtime is optional at run time: without its jars on the class path, doctor says so and passes. */
    @Test
    void doctorWithoutOnnxRuntimeOnTheClassPathReportsItAbsentAndPasses() throws Exception {
        List<String> classPath = new ArrayList<>(List.of(TARGET.resolve("dlpack4j-cli-" + Main.projectVersion() + ".jar")
                .toString()));
        try (var jars = Files.list(TARGET.resolve("lib"))) {
            jars.map(Path::toString).filter(j -> !j.contains("onnxruntime")).forEach(classPath::add);
        }
        Run r = run(Map.of("DLPACK4J_PYTHON", System.getProperty("dlpack4j.python")), JAVA,
                "--enable-native-access=ALL-UNNAMED", "-cp", String.join(File.pathSeparator, classPath),
                "io.github.dlpack4j.cli.Main", "doctor", "--json");
        assertThat(r.exitCode()).as(r.err()).isZero();
        DoctorReport report = new ObjectMapper().readValue(r.out(), DoctorReport.class);
        assertThat(report.onnxRuntime()).isEqualTo(DoctorReport.OnnxRuntime.absent());
        assertThat(report.ok()).isTrue();
    }

    @Test
    void theExecutableJarReportsTheLegacyNumpyAndALibraryThatRaisesOnImport() throws Exception {
        Files.writeString(dir.resolve("breaks_on_import.py"), "raise RuntimeError('this module is broken on purpose')\n");
        Run r = jar(Map.of("PYTHONPATH", dir.toString()), "doctor", "--python", System.getProperty("dlpack4j.python.legacy"),
                "--module", "breaks_on_import", "--json");
        assertThat(r.exitCode()).as(r.err()).isEqualTo(1);
        assertThat(r.err()).doesNotContain("\tat ");
        DoctorReport report = new ObjectMapper().readValue(r.out(), DoctorReport.class);
        assertThat(report.jdk().nativeAccess()).containsEntry("ALL-UNNAMED", true);
        assertThat(report.python().chosenBy()).isEqualTo("--python");
        Library numpy = report.libraries().stream().filter(l -> l.name().equals("numpy")).findFirst().orElseThrow();
        assertThat(numpy.version()).isEqualTo("1.26.4");
        assertThat(numpy.protocol().capsule()).isEqualTo("dltensor");
        assertThat(numpy.protocol().versionedCapsule()).isNull();
        assertThat(numpy.protocol().javaImportRoute().detail()).startsWith("DLPACK_LEGACY_RETRY:");
        Library broken = report.libraries().getLast();
        assertThat(broken.name()).isEqualTo("breaks_on_import");
        assertThat(broken.status()).isEqualTo("import-error");
        assertThat(report.problems()).singleElement().satisfies(p -> {
            assertThat(p.message()).isEqualTo("import breaks_on_import failed: RuntimeError: this module is broken on purpose");
            assertThat(p.fix()).contains("pip install --force-reinstall breaks_on_import");
        });
    }

    @Test
    void aMissingInterpreterIsOneLineWithTheFix() throws Exception {
        Run r = jar(Map.of(), "doctor", "--python", "/nonexistent/bin/python3");
        assertOneClearLine(r, "python: no Python executable '/nonexistent/bin/python3'");
        assertThat(r.out()).contains("fix: point DLPACK4J_PYTHON");
    }

    @Test
    void aPythonWithoutASharedLibpythonIsOneLineWithTheBuildFlag() throws Exception {
        Path fake = dir.resolve("python");
        Files.writeString(fake, """
                #!/bin/sh
                echo 'version=3.11'; echo 'executable=/opt/static/bin/python'; echo 'shared=False'
                echo 'LIBDIR=/opt/static/lib'; echo 'INSTSONAME=libpython3.11.a'; echo 'LDLIBRARY=libpython3.11.a'
                """);
        Files.setPosixFilePermissions(fake, PosixFilePermissions.fromString("rwxr-xr-x"));
        Run r = jar(Map.of(), "doctor", "--python", fake.toString());
        assertOneClearLine(r, "without a shared libpython");
        assertThat(r.out()).contains("--enable-shared");
    }

    @Test
    void theDemoWithoutPythonShowsTheJavaPartAndHowToGetTheRest() throws Exception {
        Run r = jar(Map.of("DLPACK4J_PYTHON", "/nonexistent/python3"), "demo");
        assertThat(r.exitCode()).isZero();
        assertThat(r.out()).contains("the deleter ran exactly once", "No usable Python (/nonexistent/python3, chosen by DLPACK4J_PYTHON)",
                "DLPACK4J_PYTHON=.venv/bin/python", "scripts/demo").doesNotContain("\tat ");
    }
}
