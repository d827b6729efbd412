package io.github.dlpack4j.model;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

/** The module's Python helpers, shipped in its jar beside its classes and run once per interpreter. */
final class PythonModules {
    private PythonModules() {
    }

    /**
     * {@return the helper module {@code name} ({@code name.py} in this package's resources), run into
     * {@code sys.modules} the first time; the caller holds the GIL}
     */
    static PyObject module(Python python, String name) {
        try (PyObject sys = python.importModule("sys");
             PyObject modules = sys.attr("modules");
             PyObject present = modules.callMethod("__contains__", name)) {
            if (!present.asBoolean()) {
                try (PyObject types = python.importModule("types");
                     PyObject builtins = python.importModule("builtins");
                     PyObject module = types.callMethod("ModuleType", name);
                     PyObject namespace = module.attr("__dict__");
                     PyObject code = builtins.callMethod("compile", resource(name), name + ".py", "exec");
                     PyObject ignored = builtins.callMethod("exec", code, namespace)) {
                    // Another thread may have made it meanwhile (exec can let the GIL go): every
                    // caller gets the module that is in sys.modules, whose state (a registry) is shared.
                    return modules.callMethod("setdefault", name, module);
                }
            }
            return modules.get(name);
        }
    }

    private static String resource(String name) {
        try (InputStream in = PythonModules.class.getResourceAsStream(name + ".py")) {
            if (in == null) {
                throw new IllegalStateException(name + ".py is missing from dlpack4j-model's jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
