package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.Device;
import io.github.dlpack4j.DeviceType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * CUDA memory through dlpack4j, against the real producers on a machine with an NVIDIA GPU (skipped
 * where torch sees none, as on CI): imports are zero-copy views that keep the device and the
 * pointer, refuse host reads, and go back to torch as the same memory. dlpack4j allocates no CUDA
 * memory and runs no kernels itself; these tests pin the device and stream seams it has.
 *
 * <p>{@code scripts/cuda-bundle} packs this class with a linked JDK 25 for a GPU machine that has
 * neither Maven nor a JDK. Written without a GPU at hand (none was lent to the session that wrote
 * it): the first run on one is its first real check.
 */
class CudaTest {
    static final Python PY = Python.start();
    static final Device CUDA0 = new Device(DeviceType.CUDA, 0);

    @BeforeAll
    static void needsAGpu() {
        try (PyObject r = PY.eval("__import__('importlib.util').util.find_spec('torch') is not None "
                + "and __import__('torch').cuda.is_available()")) {
            Assumptions.assumeTrue(r.asBoolean(), "no CUDA device that torch can use");
        }
        PY.exec("""
                import torch, numpy as np
                cuda_t = torch.arange(12, dtype=torch.float32, device='cuda').reshape(3, 4)
                torch.cuda.synchronize()
                """);
    }

    private static long evalLong(String expression) {
        try (PyObject r = PY.eval(expression)) {
            return r.asLong();
        }
    }

    @Test
    void aTorchCudaTensorImportsAsAViewOfTheSameDeviceMemory() {
        try (PyObject t = PY.getGlobal("cuda_t")) {
            ImportRequest request = ImportRequest.of(t);
            assertThat(request.device()).isEqualTo(CUDA0);
            try (ManagedTensor m = request.importTensor()) {
                Tensor x = m.tensor();
                assertThat(request.path()).isIn(ImportPath.EXCHANGE_API, ImportPath.DLPACK);
                assertThat(x.device()).isEqualTo(CUDA0);
                assertThat(x.shape()).containsExactly(3, 4);
                assertThat(x.strides()).containsExactly(4, 1);
                assertThat(x.dataPointer()).isEqualTo(evalLong("cuda_t.data_ptr()"));
                System.out.println("[cuda] torch " + evalString("torch.__version__") + " import route: "
                        + request.path() + ", " + x);
            }
        }
    }

    @Test
    void aTransposedCudaViewKeepsItsStridesAndOffset() {
        PY.exec("cuda_v = cuda_t.t()[1:]");
        try (PyObject v = PY.getGlobal("cuda_v"); ManagedTensor m = PythonDlpack.fromDlpack(v)) {
            assertThat(m.tensor().shape()).containsExactly(3, 3);
            assertThat(m.tensor().strides()).containsExactly(1, 4);
            assertThat(m.tensor().dataPointer()).isEqualTo(evalLong("cuda_v.data_ptr()"));
        }
    }

    @Test
    void hostReadsOfCudaMemoryAreRefusedNotCrashes() {
        try (PyObject t = PY.getGlobal("cuda_t"); ManagedTensor m = PythonDlpack.fromDlpack(t)) {
            assertThatThrownBy(() -> m.tensor().getDouble(0, 0)).isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("cuda");
            assertThatThrownBy(() -> m.tensor().data()).isInstanceOf(UnsupportedOperationException.class);
        }
    }

    @Test
    void aCudaImportExportedBackIsTheSameMemoryToTorch() {
        int exportsBefore = Dlpack.liveExports();
        try (PyObject t = PY.getGlobal("cuda_t"); ManagedTensor m = PythonDlpack.fromDlpack(t);
             PyObject exported = PythonDlpack.toPython(m.tensor())) {
            PY.setGlobal("java_cuda", exported);
            PY.exec("""
                    back = torch.from_dlpack(java_cuda)
                    assert back.device == cuda_t.device, back.device
                    assert back.data_ptr() == cuda_t.data_ptr()
                    assert torch.equal(back, cuda_t)
                    back.add_(1)  # a write through the round trip reaches the original
                    torch.cuda.synchronize()
                    assert float(cuda_t[2, 3]) == 12.0, float(cuda_t[2, 3])
                    cuda_t.sub_(1)
                    del back
                    """);
            assertThat(evalLong("java_cuda.__dlpack_device__()[0]")).isEqualTo(DeviceType.CUDA.code());
            PY.exec("del java_cuda");
        }
        assertThat(Dlpack.liveExports()).isEqualTo(exportsBefore);
    }

    @Test
    void numpyAskedForAJavaCudaTensorGetsAPythonErrorNotACrash() {
        try (PyObject t = PY.getGlobal("cuda_t"); ManagedTensor m = PythonDlpack.fromDlpack(t);
             PyObject exported = PythonDlpack.toPython(m.tensor())) {
            PY.setGlobal("java_cuda", exported);
            PY.exec("""
                    try:
                        np.from_dlpack(java_cuda)
                        numpy_error = None
                    except Exception as e:
                        numpy_error = type(e).__name__ + ': ' + str(e)
                    del java_cuda
                    """);
            String error = evalString("numpy_error");
            System.out.println("[cuda] numpy.from_dlpack(java cuda tensor): " + error);
            assertThat(error).isNotNull().matches("(BufferError|ValueError|RuntimeError|TypeError): .+");
        }
    }

    @Test
    void cupyAndJaxCudaArraysImportThroughDlpack() {
        PY.exec("""
                import importlib.util
                probes = {}
                if importlib.util.find_spec('cupy'):
                    import cupy
                    c = cupy.arange(6, dtype=cupy.float64).reshape(2, 3)
                    probes['cupy'] = (c, c.data.ptr)
                if importlib.util.find_spec('jax'):
                    import jax, jax.numpy as jnp
                    gpus = [d for d in jax.devices() if d.platform == 'gpu']
                    if gpus:
                        j = jax.device_put(jnp.arange(6, dtype=jnp.float32).reshape(2, 3), gpus[0])
                        probes['jax'] = (j, j.unsafe_buffer_pointer())
                probe_names = sorted(probes)
                """);
        String names = evalString("','.join(probe_names)");
        System.out.println("[cuda] other CUDA producers: " + names);
        Assumptions.assumeFalse(names.isEmpty(), "neither cupy nor jax with a GPU");
        for (String name : names.split(",")) {
            try (PyObject array = PY.eval("probes['" + name + "'][0]");
                 ManagedTensor m = PythonDlpack.fromDlpack(array)) {
                assertThat(m.tensor().device()).as(name).isEqualTo(CUDA0);
                assertThat(m.tensor().shape()).as(name).containsExactly(2, 3);
                assertThat(m.tensor().dataPointer()).as(name).isEqualTo(evalLong("probes['" + name + "'][1]"));
            }
        }
    }

    private static String evalString(String expression) {
        try (PyObject r = PY.eval(expression)) {
            return r.isNone() ? null : r.str();
        }
    }
}
