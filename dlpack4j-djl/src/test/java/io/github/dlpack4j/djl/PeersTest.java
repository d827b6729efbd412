package io.github.dlpack4j.djl;

import static org.assertj.core.api.Assertions.assertThat;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.arrow.ArrowTensors;
import io.github.dlpack4j.onnxruntime.DlpackSession;
import io.github.dlpack4j.onnxruntime.OrtTensors;
import io.github.dlpack4j.onnxruntime.SharedOnnxTensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * numpy and jax (in the embedded interpreter), ONNX Runtime and Arrow reading and writing DJL's
 * memory at its own address, and DJL reading theirs. No torch here: DJL's libtorch is in this JVM
 * (see {@link LibtorchConflictTest}).
 */
class PeersTest {
    private static final Python PY = Python.start();
    private static NDManager manager;
    private Leaks leaks;

    @BeforeAll
    static void start() {
        PY.exec("import gc, numpy as np, jax, jax.numpy as jnp");
        manager = NDManager.newBaseManager("PyTorch");
    }

    @AfterAll
    static void stop() {
        manager.close();
    }

    @BeforeEach
    void baseline() {
        leaks = Leaks.now();
    }

    @AfterEach
    void nothingLeaks() {
        PY.exec("x = None\ngc.collect()");
        leaks.assertBack();
    }

    private static long address(NDArray a) {
        return MemorySegment.ofBuffer(a.toByteBuffer(true)).address();
    }

    private static long pyLong(String expr) {
        try (PyObject o = PY.eval(expr)) {
            return o.asLong();
        }
    }

    private static void toPython(String name, Tensor t, String consumer) {
        try (PyObject p = PythonDlpack.toPython(t)) {
            PY.setGlobal("_t", p);
        }
        PY.exec(name + " = " + consumer + "(_t)\ndel _t");
    }

    @Test
    void numpy_reads_and_writes_a_djl_result_at_its_address() {
        try (NDArray a = manager.arange(12f).reshape(3, 4).mul(0.5f); Tensor t = DjlTensors.of(a)) {
            toPython("x", t, "np.from_dlpack");
            assertThat(pyLong("x.ctypes.data")).isEqualTo(address(a));
            assertThat(pyLong("int(x.sum() * 2)")).isEqualTo(66);
            PY.exec("x[2, 3] = -1");
            assertThat(a.getFloat(2, 3)).isEqualTo(-1f);
        }
    }

    @Test
    void jax_reads_a_djl_result_at_its_address() {
        try (NDArray a = manager.arange(16f).reshape(4, 4); Tensor t = DjlTensors.of(a)) {
            toPython("x", t, "jnp.from_dlpack");
            assertThat(pyLong("x.unsafe_buffer_pointer()")).isEqualTo(address(a));
            assertThat(pyLong("int(jnp.trace(x))")).isEqualTo(30);
        }
    }

    @Test
    void a_numpy_array_becomes_a_djl_array_over_numpys_memory() {
        PY.exec("x = np.arange(6, dtype=np.int64).reshape(2, 3) * 10");
        try (PyObject x = PY.eval("x"); ManagedTensor m = PythonDlpack.fromDlpack(x)) {
            NDArray a = DjlTensors.toNDArray(m.tensor(), manager);
            assertThat(address(a)).isEqualTo(pyLong("x.ctypes.data"));
            assertThat(a.sum().getLong()).isEqualTo(150L);
            a.close();
        }
    }

    @Test
    void onnx_runtime_reads_a_djl_input_and_writes_a_djl_output_in_place() throws Exception {
        PY.exec("""
                import onnx
                from onnx import helper, TensorProto as T
                g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["y"])], "square",
                                      [helper.make_tensor_value_info("x", T.FLOAT, [2, 3])],
                                      [helper.make_tensor_value_info("y", T.FLOAT, [2, 3])])
                m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
                m.ir_version = 10
                square = np.frombuffer(m.SerializeToString(), np.uint8)
                """);
        byte[] model;
        try (PyObject b = PY.eval("square"); ManagedTensor m = PythonDlpack.fromDlpack(b)) {
            model = m.tensor().toByteArray();
        }
        try (OrtSession session = OrtEnvironment.getEnvironment().createSession(model);
             NDArray x = manager.arange(6f).reshape(2, 3); NDArray y = manager.zeros(x.getShape());
             Tensor xt = DjlTensors.of(x); Tensor yt = DjlTensors.of(y)) {
            try (SharedOnnxTensor shared = OrtTensors.toOnnxTensor(xt)) {
                assertThat(MemorySegment.ofBuffer(shared.onnxTensor().getBufferRef().orElseThrow()).address())
                        .as("ORT's input address").isEqualTo(address(x));
            }
            DlpackSession.of(session).run(Map.of("x", xt), Map.of("y", yt));
            assertThat(y.toFloatArray()).containsExactly(0f, 1f, 4f, 9f, 16f, 25f);
        }
    }

    @Test
    void an_arrow_column_and_a_djl_array_share_memory_both_ways() {
        try (BufferAllocator allocator = new RootAllocator(); NDArray a = manager.arange(4f).add(1);
             Tensor t = DjlTensors.of(a); FieldVector v = ArrowTensors.toVector(t, allocator)) {
            assertThat(v.getDataBuffer().memoryAddress()).isEqualTo(address(a));
            assertThat(((Float4Vector) v).get(3)).isEqualTo(4f);
        }
        try (BufferAllocator allocator = new RootAllocator(); Float4Vector column = new Float4Vector("c", allocator)) {
            column.allocateNew(3);
            for (int i = 0; i < 3; i++) {
                column.set(i, i * 1.5f);
            }
            column.setValueCount(3);
            // A manager of its own, closed before the allocator: its close gives Arrow's buffer back
            // (a closed array's share otherwise waits for the garbage collector).
            try (NDManager scope = manager.newSubManager(); Tensor t = ArrowTensors.of(column)) {
                NDArray a = DjlTensors.toNDArray(t, scope);
                assertThat(address(a)).isEqualTo(column.getDataBuffer().memoryAddress());
                assertThat(a.toFloatArray()).containsExactly(0f, 1.5f, 3f);
            }
        }
    }
}
