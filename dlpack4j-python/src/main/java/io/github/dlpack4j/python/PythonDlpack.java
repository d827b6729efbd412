package io.github.dlpack4j.python;

import io.github.dlpack4j.ManagedTensor;

/**
 * The DLPack Python protocol from Java: the one-step import of any object that speaks DLPack
 * (NumPy, PyTorch, JAX arrays and capsules). For device and stream negotiation use
 * {@link ImportRequest}.
 *
 * <pre>{@code
 * try (PyObject a = py.eval("__import__('numpy').arange(6.0).reshape(2, 3)");
 *      ManagedTensor m = PythonDlpack.fromDlpack(a)) {
 *     m.tensor().getDouble(1, 2);   // 5.0, read from NumPy's memory
 * }
 * }</pre>
 */
public final class PythonDlpack {
    private PythonDlpack() {}

    /** {@code ImportRequest.of(source).importTensor()}: zero-copy, owned by the returned tensor. */
    public static ManagedTensor fromDlpack(PyObject source) {
        return ImportRequest.of(source).importTensor();
    }
}
