/**
 * CPython embedded in the JVM through {@code java.lang.foreign}, and the DLPack Python protocol in
 * both directions: {@link io.github.dlpack4j.python.Python}, {@link io.github.dlpack4j.python.PyObject},
 * {@link io.github.dlpack4j.python.PythonDlpack}, {@link io.github.dlpack4j.python.ImportRequest}.
 *
 * <p>The module loads libpython and calls it through restricted FFM methods: run with
 * {@code --enable-native-access=io.github.dlpack4j.core,io.github.dlpack4j.python} on the module
 * path, or {@code --enable-native-access=ALL-UNNAMED} on the class path.
 */
module io.github.dlpack4j.python {
    requires transitive io.github.dlpack4j.core;

    exports io.github.dlpack4j.python;
}
