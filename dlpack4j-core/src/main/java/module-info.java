/**
 * DLPack for the JVM: tensors in native memory, their export as DLPack managed tensors and the
 * validated adoption of foreign ones, through {@code java.lang.foreign}.
 *
 * <p>{@link io.github.dlpack4j} is the everyday API ({@link io.github.dlpack4j.Tensor},
 * {@link io.github.dlpack4j.Dlpack}, {@link io.github.dlpack4j.ManagedTensor});
 * {@link io.github.dlpack4j.abi} holds the C layouts of the DLPack structs for code that reads or
 * writes them itself. The module calls restricted FFM methods: run with
 * {@code --enable-native-access=io.github.dlpack4j.core} on the module path, or
 * {@code --enable-native-access=ALL-UNNAMED} on the class path.
 */
module io.github.dlpack4j.core {
    exports io.github.dlpack4j;
    // The C layouts are API: a native binding (and dlpack4j-python) reads and writes the structs
    // through them. They are constants and layouts only, pinned to the C header by AbiLayoutTest.
    exports io.github.dlpack4j.abi;
    // Shared machinery of dlpack4j's own modules, not API.
    exports io.github.dlpack4j.internal to io.github.dlpack4j.python, io.github.dlpack4j.arrow, io.github.dlpack4j.onnxruntime,
            io.github.dlpack4j.model;
}
