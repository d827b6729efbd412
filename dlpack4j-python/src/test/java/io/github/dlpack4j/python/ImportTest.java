package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Device;
import io.github.dlpack4j.DlpackException;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Python to Java against the real peers in .venv: numpy 2.4.6, jax 0.10.2, torch 2.13. */
class ImportTest {
    static final Python PY = Python.start();

    static {
        PY.exec("import numpy as np, weakref, gc");
    }

    /** Every element of {@code expr} (a numpy expression) as doubles, as numpy computes them. */
    private static double[] numpyValues(String expr) {
        try (PyObject list = PY.eval("[float(x) for x in np.asarray(" + expr + ").ravel().tolist()]")) {
            return ((List<?>) list.toJava()).stream().mapToDouble(x -> (Double) x).toArray();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "float32", "float64"})
    void everyRealDtypeNumpyExportsArrivesWithNumpysValues(String dtype) {
        String expr = "(np.arange(24) * 7 % 11 - 3).astype(np.float64).astype('" + dtype + "').reshape(2, 3, 4)";
        PY.exec("a = " + expr);
        try (PyObject a = PY.getGlobal("a"); ManagedTensor m = PythonDlpack.fromDlpack(a)) {
            assertThat(m.isVersioned()).isTrue();
            assertThat(m.tensor().dtype().toString()).isEqualTo(dtype);
            assertThat(m.tensor().shape()).containsExactly(2, 3, 4);
            assertThat(m.tensor().toDoubleArray()).containsExactly(numpyValues("a"));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"complex64", "complex128"})
    void complexNumbersArriveAsRealImaginaryPairs(String dtype) {
        PY.exec("c = (np.arange(6) + 1j * (np.arange(6) - 2.5)).astype('" + dtype + "')");
        try (PyObject c = PY.getGlobal("c"); ManagedTensor m = PythonDlpack.fromDlpack(c)) {
            double[] pairs = m.tensor().toComplexArray();
            assertThat(pairs).startsWith(0, -2.5, 1, -1.5).endsWith(5, 2.5);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"np.float32(3.5)", "np.zeros((0, 3))", "np.arange(10.0)[1:8:3]", "np.arange(12.0).reshape(3, 4).T",
            "np.arange(10.0)[::-1]", "np.broadcast_to(np.arange(3.0), (4, 3))", "np.arange(64.0).reshape(2, 2, 2, 2, 2, 2)[:, 1, :, ::-1]",
            "np.asfortranarray(np.arange(6.0).reshape(2, 3))"})
    void shapesAndLayoutsArriveWithTheRightElements(String expr) {
        PY.exec("a = np.asarray(" + expr + ")");
        try (PyObject a = PY.getGlobal("a"); ManagedTensor m = PythonDlpack.fromDlpack(a)) {
            try (PyObject shape = PY.eval("list(a.shape)")) {
                assertThat(m.tensor().shape()).containsExactly(((List<?>) shape.toJava()).stream()
                        .mapToLong(x -> (Long) x).toArray());
            }
            assertThat(m.tensor().toDoubleArray()).containsExactly(numpyValues("a"));
        }
    }

    @Test
    void writesFromJavaAreSeenByNumpyAndReadOnlyArraysArriveReadOnly() {
        PY.exec("w = np.zeros(4)\nr = np.arange(3.0)\nr.flags.writeable = False");
        try (PyObject w = PY.getGlobal("w"); ManagedTensor m = PythonDlpack.fromDlpack(w)) {
            m.tensor().setDouble(42, 2);
            try (PyObject v = PY.eval("w[2]")) {
                assertThat(v.asDouble()).isEqualTo(42);
            }
        }
        try (PyObject r = PY.getGlobal("r"); ManagedTensor m = PythonDlpack.fromDlpack(r)) {
            assertThat(m.tensor().isReadOnly()).isTrue();
            assertThatThrownBy(() -> m.tensor().setDouble(1, 0)).isInstanceOf(UnsupportedOperationException.class);
        }
    }

    @Test
    void theMemoryOutlivesThePythonObjectUntilJavaClosesAndThenTheProducerLetsGo() {
        PY.exec("big = np.arange(1000.0)\nref = weakref.ref(big)");
        ManagedTensor m;
        try (PyObject big = PY.getGlobal("big")) {
            m = PythonDlpack.fromDlpack(big);
        }
        PY.exec("del big\ngc.collect()");
        try (PyObject alive = PY.eval("ref() is not None")) {
            assertThat(alive.asBoolean()).as("numpy keeps the array for the export").isTrue();
        }
        assertThat(m.tensor().getDouble(999)).isEqualTo(999);
        Thread closer = new Thread(m::close); // a thread without the GIL: the deleter takes it itself
        closer.start();
        try {
            closer.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        PY.exec("gc.collect()");
        try (PyObject alive = PY.eval("ref() is not None")) {
            assertThat(alive.asBoolean()).as("the producer's deleter released the array").isFalse();
        }
    }

    @Test
    void numpyGoesThroughVersionedDlpackAndJaxThroughALegacyCapsule() {
        try (PyObject a = PY.eval("np.ones(3)")) {
            ImportRequest r = ImportRequest.of(a);
            assertThat(r.device()).isEqualTo(Device.CPU);
            try (ManagedTensor m = r.importTensor()) {
                assertThat(r.path()).isEqualTo(ImportPath.DLPACK);
                assertThat(m.isVersioned()).isTrue();
            }
        }
        PY.exec("import jax.numpy as jnp\nj = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)");
        try (PyObject j = PY.getGlobal("j")) {
            ImportRequest r = ImportRequest.of(j);
            try (ManagedTensor m = r.importTensor()) {
                assertThat(r.path()).isEqualTo(ImportPath.DLPACK);
                assertThat(m.isVersioned()).isFalse();
                assertThat(m.tensor().dtype()).isEqualTo(DataType.FLOAT32);
                assertThat(m.tensor().toFloatArray()).containsExactly(0, 1, 2, 3, 4, 5);
            }
        }
    }

    @Test
    void torchTensorsArriveWithTheirStorageOffset() {
        PY.exec("import torch\nt = torch.arange(20, dtype=torch.float64).reshape(4, 5)[1:, 2:]");
        try (PyObject t = PY.getGlobal("t"); ManagedTensor m = PythonDlpack.fromDlpack(t)) {
            assertThat(m.tensor().shape()).containsExactly(3, 3);
            assertThat(m.tensor().toDoubleArray()).containsExactly(7, 8, 9, 12, 13, 14, 17, 18, 19);
        }
    }

    @Test
    void aCapsuleIsConsumedOnceAndRenamed() {
        PY.exec("cap = np.arange(4.0).__dlpack__(max_version=(1, 0))");
        try (PyObject cap = PY.getGlobal("cap")) {
            ImportRequest r = ImportRequest.of(cap);
            assertThat(r.device()).isEqualTo(Device.CPU);
            try (ManagedTensor m = r.importTensor()) {
                assertThat(r.path()).isEqualTo(ImportPath.CAPSULE);
                assertThat(m.tensor().toDoubleArray()).containsExactly(0, 1, 2, 3);
            }
            assertThat(cap.repr()).contains("used_dltensor_versioned");
            assertThatThrownBy(() -> PythonDlpack.fromDlpack(cap)).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("consumed already");
        }
    }

    @Test
    void badProducersGetClearErrors() {
        try (PyObject notArray = PY.eval("object()")) {
            assertThatThrownBy(() -> PythonDlpack.fromDlpack(notArray)).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("object").hasMessageContaining("__dlpack__");
        }
        PY.exec("""
                class Refuses:
                    def __dlpack_device__(self): return (1, 0)
                    def __dlpack__(self, **kw): raise BufferError('cannot export this')
                class ReturnsInt:
                    def __dlpack_device__(self): return (1, 0)
                    def __dlpack__(self, **kw): return 42
                class WrongCapsule:
                    def __dlpack_device__(self): return (1, 0)
                    def __dlpack__(self, **kw):
                        import ctypes
                        new = ctypes.pythonapi.PyCapsule_New
                        new.restype = ctypes.py_object
                        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
                        return new(8, b'not_a_tensor', None)
                """);
        try (PyObject o = PY.eval("Refuses()")) {
            assertThatThrownBy(() -> PythonDlpack.fromDlpack(o)).isInstanceOfSatisfying(PythonException.class,
                    e -> assertThat(e.pythonType()).isEqualTo("BufferError"));
        }
        try (PyObject o = PY.eval("ReturnsInt()")) {
            assertThatThrownBy(() -> PythonDlpack.fromDlpack(o)).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("returned 42, not a DLPack capsule");
        }
        try (PyObject o = PY.eval("WrongCapsule()")) {
            assertThatThrownBy(() -> PythonDlpack.fromDlpack(o)).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("'not_a_tensor' is not a DLPack tensor");
        }
    }

    @Test
    void theImportedTensorIsAnOrdinaryJavaTensor() {
        try (PyObject a = PY.eval("np.arange(6, dtype=np.int32).reshape(2, 3)"); ManagedTensor m = PythonDlpack.fromDlpack(a)) {
            Tensor t = m.tensor();
            assertThat(t.transpose().toIntArray()).containsExactly(0, 3, 1, 4, 2, 5);
            assertThat(t.toString()).contains("dtype=int32");
        }
    }

    @Test
    void aLegacyNumpyIsAskedAgainWithoutKeywords() throws Exception {
        String out = LegacyNumpyProbe.output();
        assertThat(out).contains("numpy 1.26.4").contains("path DLPACK_LEGACY_RETRY versioned false values [0.0, 1.0, 2.0]")
                .endsWith("exit 0");
    }

    @ParameterizedTest
    @ValueSource(strings = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
            "bool", "float16", "int8", "uint8"})
    void torchsLowPrecisionAndOtherDtypesArriveWithTorchsValues(String dtype) {
        PY.exec("import torch\nt = torch.tensor([0.5, 1.0, 2.0, 4.0, 0.25, 8.0]).to(torch." + dtype + ")");
        try (PyObject t = PY.getGlobal("t"); ManagedTensor m = PythonDlpack.fromDlpack(t);
             PyObject expected = PY.eval("[float(x) for x in t.float().tolist()]")) {
            assertThat(m.tensor().dtype().toString()).isEqualTo(dtype);
            assertThat(m.tensor().toDoubleArray()).containsExactly(((List<?>) expected.toJava()).stream()
                    .mapToDouble(x -> (Double) x).toArray());
        }
    }

    @Test
    void jaxBfloat16ArrivesInALegacyCapsule() {
        PY.exec("import jax.numpy as jnp\nj = jnp.array([1.5, -2.0, 3.25], dtype=jnp.bfloat16)");
        try (PyObject j = PY.getGlobal("j"); ManagedTensor m = PythonDlpack.fromDlpack(j)) {
            assertThat(m.isVersioned()).isFalse();
            assertThat(m.tensor().dtype()).isEqualTo(DataType.BFLOAT16);
            assertThat(m.tensor().toDoubleArray()).containsExactly(1.5, -2.0, 3.25);
        }
    }

    /** A capsule made in Python with ctypes around a hand-written struct, with a deleter that counts. */
    private static final String HANDMADE = CtypesDlpack.STRUCTS + """
            deleted = []
            DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda p: deleted.append(p))
            keep = []
            def handmade(major=1, ndim=1):
                return versioned_capsule([1, 2, 3, 4], DELETER, keep, major, ndim)
            """;

    @Test
    void aWellNamedCapsuleWithABrokenStructIsRefusedAndItsDeleterRunsOnce() {
        PY.exec(HANDMADE);
        try (PyObject good = PY.eval("handmade()"); ManagedTensor m = PythonDlpack.fromDlpack(good)) {
            assertThat(m.tensor().toDoubleArray()).containsExactly(1, 2, 3, 4);
        }
        try (PyObject n = PY.eval("len(deleted)")) {
            assertThat(n.asLong()).isEqualTo(1);
        }
        try (PyObject major2 = PY.eval("handmade(major=2)")) {
            assertThatThrownBy(() -> PythonDlpack.fromDlpack(major2)).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("version = 2.3");
        }
        try (PyObject badNdim = PY.eval("handmade(ndim=-1)")) {
            assertThatThrownBy(() -> PythonDlpack.fromDlpack(badNdim)).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("dl_tensor.ndim = -1");
        }
        try (PyObject n = PY.eval("len(deleted)")) {
            assertThat(n.asLong()).as("each refused tensor's deleter ran once").isEqualTo(3);
        }
    }
}
