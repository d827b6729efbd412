/**
 * CPython embedded in the JVM through {@code java.lang.foreign}, and the DLPack Python protocol in
 * both directions: {@link io.github.dlpack4j.python.Python}, {@link io.github.dlpack4j.python.PyObject},
 * {@link io.github.dlpack4j.python.PythonDlpack}, {@link io.github.dlpack4j.python.ImportRequest}.
 *
 * <p>Three packages, one way: {@code io.github.dlpack4j.python} is the public API and the only
 * exported package; {@code io.github.dlpack4j.python.interpreter} embeds CPython (locating, starting
 * and attaching it, the GIL, references, errors, conversions, Java functions, exits) and knows
 * nothing of DLPack; {@code io.github.dlpack4j.python.protocol} is the DLPack Python protocol
 * (capsules, {@code __dlpack__}, the C Exchange API both ways, the Python type for Java tensors,
 * torch's refusals), which uses the interpreter through its public members. {@code ArchitectureTest}
 * states these rules.
 *
 * <p>The module loads libpython and calls it through restricted FFM methods: run with
 * {@code --enable-native-access=io.github.dlpack4j.core,io.github.dlpack4j.python} on the module
 * path, or {@code --enable-native-access=ALL-UNNAMED} on the class path.
 */
module io.github.dlpack4j.python {
    requires transitive io.github.dlpack4j.core;

    exports io.github.dlpack4j.python;
}
