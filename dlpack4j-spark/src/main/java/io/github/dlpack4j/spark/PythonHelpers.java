package io.github.dlpack4j.spark;

import java.util.List;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

/**
 * The few Python functions the module runs in an executor's interpreter, in a module of their own
 * ({@code dlpack4j_spark}, never in {@code __main__}), made once per JVM.
 */
final class PythonHelpers {
    private static final String SOURCE = """
            import linecache
            import types


            def load_source(name, source, factory, args):
                filename = f"<model {name}>"
                # Tracebacks of the model's code show its lines.
                linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
                module = types.ModuleType(f"dlpack4j_model_{name}")
                module.__file__ = filename
                exec(compile(source, filename, "exec"), module.__dict__)
                if not callable(getattr(module, factory, None)):
                    raise NameError(f"model {name}: its source defines no function {factory}")
                return getattr(module, factory)(*args)


            def outputs(name, result, names):
                if isinstance(result, dict):
                    missing = [n for n in names if n not in result]
                    if missing:
                        raise KeyError(f"model {name} returned a dict without {missing}; it has {list(result)}")
                    return tuple(result[n] for n in names)
                if isinstance(result, (tuple, list)):
                    if len(result) != len(names):
                        raise ValueError(f"model {name} returned {len(result)} outputs; {len(names)} are declared: {names}")
                    return tuple(result)
                if len(names) != 1:
                    raise ValueError(f"model {name} returned one output; {len(names)} are declared: {names}")
                return (result,)
            """;

    private static volatile PythonHelpers instance;

    private final PyObject loadSource;
    private final PyObject outputs;

    private PythonHelpers(Python python) {
        try (PyObject types = python.importModule("types");
             PyObject builtins = python.importModule("builtins");
             PyObject module = types.callMethod("ModuleType", "dlpack4j_spark");
             PyObject namespace = module.attr("__dict__");
             PyObject ignored = builtins.callMethod("exec", SOURCE, namespace)) {
            loadSource = module.attr("load_source");
            outputs = module.attr("outputs");
        }
    }

    static PythonHelpers of(Python python) {
        PythonHelpers h = instance;
        if (h == null) {
            synchronized (PythonHelpers.class) {
                if (instance == null) {
                    instance = new PythonHelpers(python);
                }
                h = instance;
            }
        }
        return h;
    }

    /** Runs {@code source} as a module and returns {@code factory(*args)} of it. */
    PyObject loadSource(String name, String source, String factory, List<Object> args) {
        return loadSource.call(name, source, factory, args);
    }

    /** The model's {@code result} as a tuple of the declared outputs, by position or by name. */
    PyObject outputs(String model, PyObject result, List<String> names) {
        return outputs.call(model, result, names);
    }
}
