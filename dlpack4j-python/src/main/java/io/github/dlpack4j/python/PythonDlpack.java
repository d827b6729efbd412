package io.github.dlpack4j.python;

import io.github.dlpack4j.DlpackExporter;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.interpreter.Gil;
import io.github.dlpack4j.python.protocol.ImportNegotiation;
import io.github.dlpack4j.python.protocol.JavaTensorType;

/**
 * The DLPack Python protocol from Java, both ways: the one-step import of any object that speaks
 * DLPack (NumPy, PyTorch, JAX arrays and capsules; for device and stream negotiation use
 * {@link ImportRequest}), and Java tensors as Python objects that any DLPack consumer takes.
 *
 * {@snippet :
 * Python py = Python.start();
 * try (PyObject a = py.eval("__import__('numpy').arange(6.0).reshape(2, 3)");
 *      ManagedTensor m = PythonDlpack.fromDlpack(a)) {
 *     m.tensor().getDouble(1, 2);   // 5.0, read from NumPy's memory
 * }
 * try (Tensor t = Tensor.of(new float[] {1, 2, 3});
 *      PyObject obj = PythonDlpack.toPython(t)) {
 *     py.setGlobal("t", obj);
 *     py.eval("__import__('numpy').from_dlpack(t).sum()");   // 6.0, read from Java's memory
 * }
 * }
 */
public final class PythonDlpack {
    private PythonDlpack() {}

    /**
     * {@code ImportRequest.of(source).importTensor()}: zero-copy, owned by the returned tensor.
     *
     * @param source an array, a tensor or a DLPack capsule
     * @return the import; closing it runs the producer's deleter
     * @throws PythonException the producer's own error, with its Python type
     * @throws io.github.dlpack4j.DlpackException if {@code source} does not speak DLPack, or its tensor breaks the rules
     */
    public static ManagedTensor fromDlpack(PyObject source) {
        java.util.Objects.requireNonNull(source, "source");
        return ImportNegotiation.importTensor(source);
    }

    /**
     * A Python object ({@code dlpack4j.Tensor}) for {@code tensor}, with {@code __dlpack__},
     * {@code __dlpack_device__} and the DLPack C Exchange API. It is reusable: each
     * {@code __dlpack__} call makes a fresh export in a fresh single-use capsule, and the object
     * stays valid.
     *
     * <p>The object holds its own {@link Tensor#share() share} of the tensor: closing the Java
     * tensor does not affect it, and the memory lives until the Java owner, the Python object and
     * every consumer of an export have all let go, in any order (for memory that
     * {@link Tensor#wrap} borrowed, only as long as the caller's arena stays open).
     *
     * @param tensor the tensor to offer to Python; it stays the caller's to close
     * @return a new reference to the Python object
     * @throws IllegalStateException if {@code tensor} is closed
     */
    public static PyObject toPython(Tensor tensor) {
        return toPython((DlpackExporter) tensor);
    }

    /**
     * A Python object ({@code dlpack4j.Tensor}) for any {@link DlpackExporter}: each
     * {@code __dlpack__} call asks it for a fresh export of the request (see
     * {@link #toPython(Tensor)}). A {@link Tensor} is held through its own share, as there; any other
     * exporter is only referenced and must stay usable while Python uses the object.
     *
     * @param exporter answers each {@code __dlpack__} call with a fresh export
     * @return a new reference to the Python object
     * @throws IllegalStateException if {@code exporter} is a closed tensor
     */
    public static PyObject toPython(DlpackExporter exporter) {
        java.util.Objects.requireNonNull(exporter, "exporter");
        return Gil.with(() -> {
            if (exporter instanceof Tensor t) {
                Tensor share = t.share();
                try {
                    return PyObject.steal(JavaTensorType.newInstance(share, share));
                } catch (Throwable e) {
                    share.close();
                    throw e;
                }
            }
            return PyObject.steal(JavaTensorType.newInstance(exporter, null));
        });
    }
}
