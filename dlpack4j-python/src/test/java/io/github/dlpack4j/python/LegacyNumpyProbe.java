package io.github.dlpack4j.python;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * Run in a child JVM whose Python is .venv-legacy (numpy 1.26.4, DLPack before 1.0), both ways:
 * importing a numpy array, and numpy consuming Java exports. {@link #output()} runs it once per test
 * JVM for {@link ImportTest} and {@link ExportTest}.
 */
public final class LegacyNumpyProbe {
    private static String output;

    private LegacyNumpyProbe() {}

    /** What the probe printed, with its exit code last. */
    static synchronized String output() throws Exception {
        if (output == null) {
            Path log = Files.createTempFile("dlpack4j-legacy", ".log");
            Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                    "-Ddlpack4j.python=" + System.getProperty("dlpack4j.python.legacy"), LegacyNumpyProbe.class.getName())
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start();
            boolean done = p.waitFor(120, TimeUnit.SECONDS);
            output = Files.readString(log, StandardCharsets.UTF_8) + (done ? "exit " + p.exitValue() : "timed out");
            Files.delete(log);
        }
        return output;
    }

    public static void main(String[] args) {
        Python py = Python.start();
        py.exec("import numpy as np");
        try (PyObject version = py.eval("np.__version__"); PyObject a = py.eval("np.arange(3.0)")) {
            System.out.println("numpy " + version.str());
            ImportRequest r = ImportRequest.of(a);
            try (ManagedTensor m = r.importTensor()) {
                System.out.println("path " + r.path() + " versioned " + m.isVersioned() + " values "
                        + Arrays.toString(m.tensor().toDoubleArray()));
            }
        }
        try (Tensor t = Tensor.of(new double[] {1.5, 2.5, 3.5}); PyObject w = PythonDlpack.toPython(t);
             PyObject ro = PythonDlpack.toPython(t.readOnly())) {
            py.setGlobal("w", w);
            py.setGlobal("ro", ro);
            py.exec("c = np.from_dlpack(w)"); // numpy 1.x makes every DLPack import read-only
            t.setDouble(-1, 0);
            try (PyObject values = py.eval("c.tolist()")) {
                System.out.println("consumed " + values.toJava());
            }
            try {
                py.exec("np.from_dlpack(ro)");
                System.out.println("read-only consumed");
            } catch (PythonException e) {
                System.out.println("read-only refused with " + e.pythonType());
            }
        }
    }
}
