package io.github.dlpack4j.python;

import io.github.dlpack4j.ManagedTensor;
import java.util.Arrays;

/** Run by {@link ImportTest} in a child JVM whose Python is .venv-legacy (numpy 1.26.4). */
public final class LegacyImportProbe {
    private LegacyImportProbe() {}

    public static void main(String[] args) {
        Python py = Python.start();
        try (PyObject version = py.eval("__import__('numpy').__version__");
             PyObject a = py.eval("__import__('numpy').arange(3.0)")) {
            System.out.println("numpy " + version.str());
            ImportRequest r = ImportRequest.of(a);
            try (ManagedTensor m = r.importTensor()) {
                System.out.println("path " + r.path() + " versioned " + m.isVersioned() + " values "
                        + Arrays.toString(m.tensor().toDoubleArray()));
            }
        }
    }
}
