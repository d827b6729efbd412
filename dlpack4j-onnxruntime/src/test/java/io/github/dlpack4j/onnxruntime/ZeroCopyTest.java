package io.github.dlpack4j.onnxruntime;

import static io.github.dlpack4j.onnxruntime.Models.PY;
import static org.assertj.core.api.Assertions.assertThat;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.arrow.ArrowTensors;
import java.lang.foreign.MemorySegment;
import java.nio.Buffer;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.Float4Vector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** ORT reads and writes the tensors' own memory, wherever they come from. */
class ZeroCopyTest {
    @AfterEach
    void dropPythonsArrays() {
        PY.exec("""
                for _n in [n for n in globals() if n.startswith('x_')]:
                    del globals()[_n]
                gc.collect()""");
    }

    @Test
    void anOnnxTensorIsOverTheTensorsAddressAndDoesNotOwnItsBuffer() throws OrtException {
        try (Tensor x = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
             SharedOnnxTensor shared = OrtTensors.toOnnxTensor(x)) {
            OnnxTensor onnx = shared.onnxTensor();
            assertThat(onnx.ownsBuffer()).isFalse();
            Buffer buffer = onnx.getBufferRef().orElseThrow();
            assertThat(MemorySegment.ofBuffer(buffer).address()).isEqualTo(x.dataPointer());
            assertThat(onnx.getInfo().getShape()).containsExactly(2, 3);
        }
    }

    @Test
    void ortReadsTheMemoryInPlaceSoAWriteAfterSharingIsSeenByTheRun() throws OrtException {
        try (OrtSession s = Models.session("identity('identity_f32', T.FLOAT)");
             Tensor x = Tensor.of(new float[] {1, 2, 3}, 1, 3);
             SharedOnnxTensor shared = OrtTensors.toOnnxTensor(x)) {
            x.setDouble(42, 0, 1); // after the OnnxTensor was made: a copy would not see it
            try (OrtSession.Result r = s.run(Map.of("x", shared.onnxTensor()))) {
                assertThat(((OnnxTensor) r.get(0)).getFloatBuffer().array()).containsExactly(1, 42, 3);
            }
        }
    }

    @Test
    void aPinnedOutputIsWrittenAtTheTensorsAddressWhereNumpyAlreadyLooks() throws OrtException {
        PY.exec("x_out = np.zeros((2, 3), np.float32)\nx_address = x_out.ctypes.data");
        try (OrtSession s = Models.session("two_in_two_out('two')");
             Tensor a = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
             ManagedTensor out = Models.fromPython("x_out")) {
            assertThat(out.tensor().dataPointer()).isEqualTo(Models.pyLong("x_address"));
            DlpackSession.of(s).run(Map.of("a", a, "b", a), Map.of("product", out.tensor()));
            assertThat(Models.isTrue("np.array_equal(x_out, np.arange(1, 7, dtype=np.float32).reshape(2, 3) ** 2)"))
                    .isTrue();
        }
    }

    @Test
    void aPinnedOutputCanBeATorchTensorThatTorchReadsAfterwards() throws OrtException {
        PY.exec("x_sum = torch.zeros(2, 3)");
        try (OrtSession s = Models.session("two_in_two_out('two')");
             Tensor a = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
             ManagedTensor sum = Models.fromPython("x_sum")) {
            DlpackSession.of(s).run(Map.of("a", a, "b", a), Map.of("sum", sum.tensor()));
        }
        assertThat(Models.isTrue("torch.equal(x_sum, torch.arange(1., 7.).reshape(2, 3) * 2)")).isTrue();
    }

    /** An output tensor is over the memory ORT reports for it (GetTensorMutableData): shown on a tensor over our memory. */
    @Test
    void anOrtTensorAsATensorIsOverOrtsMemoryNotACopy() throws OrtException {
        assertThat(OrtTensors.outputsAreZeroCopy()).isTrue();
        try (Tensor x = Tensor.of(new int[] {7, 8, 9});
             SharedOnnxTensor shared = OrtTensors.toOnnxTensor(x)) {
            // toTensor takes the OnnxTensor over; closing the view closes it, then shared.close() skips it.
            try (Tensor view = OrtTensors.toTensor(shared.onnxTensor())) {
                assertThat(view.dataPointer()).isEqualTo(x.dataPointer());
                assertThat(view.toIntArray()).containsExactly(7, 8, 9);
            }
        }
    }

    @Test
    void inputsFromTorchNumpyArrowAndAViewWithAByteOffsetReachOrtInPlace() throws OrtException {
        PY.exec("x_np = np.array([[1, 2, 3]], np.float32)\nx_torch = torch.tensor([[4., 5., 6.]])");
        try (OrtSession s = Models.session("identity('identity_f32', T.FLOAT)");
             BufferAllocator allocator = new RootAllocator();
             Float4Vector column = new Float4Vector("c", allocator);
             ManagedTensor numpy = Models.fromPython("x_np");
             ManagedTensor torch = Models.fromPython("x_torch");
             Tensor whole = Tensor.of(new float[] {0, 0, 0, 10, 11, 12}, 2, 3)) {
            column.allocateNew(3);
            for (int i = 0; i < 3; i++) {
                column.set(i, 20 + i);
            }
            column.setValueCount(3);
            DlpackSession session = DlpackSession.of(s);
            try (Tensor arrowColumn = ArrowTensors.of(column)) {
                Tensor arrow = arrowColumn.reshape(1, 3);
                Tensor view = whole.slice(0, 1, 2, 1); // [1, 3] at byte offset 12
                Map<String, float[]> expected = Map.of(
                        "numpy", new float[] {1, 2, 3}, "torch", new float[] {4, 5, 6},
                        "arrow", new float[] {20, 21, 22}, "view", new float[] {10, 11, 12});
                Map<String, Tensor> inputs = Map.of("numpy", numpy.tensor(), "torch", torch.tensor(),
                        "arrow", arrow, "view", view);
                for (Map.Entry<String, Tensor> e : inputs.entrySet()) {
                    try (SharedOnnxTensor shared = OrtTensors.toOnnxTensor(e.getValue())) {
                        assertThat(MemorySegment.ofBuffer(shared.onnxTensor().getBufferRef().orElseThrow()).address())
                                .as(e.getKey()).isEqualTo(e.getValue().dataPointer());
                    }
                    try (Tensor y = session.run(Map.of("x", e.getValue())).get("y")) {
                        assertThat(y.toFloatArray()).as(e.getKey()).containsExactly(expected.get(e.getKey()));
                    }
                }
            }
        }
    }

    @Test
    void anOutputReachesNumpyWithoutACopy() throws OrtException {
        try (OrtSession s = Models.session("mlp('mlp')");
             Tensor x = Tensor.zeros(io.github.dlpack4j.DataType.FLOAT32, 1, 256);
             Tensor y = DlpackSession.of(s).run(Map.of("x", x)).get("y")) {
            Models.toNumpy("x_y", y);
            assertThat(Models.pyLong("x_y.ctypes.data")).isEqualTo(y.dataPointer());
        }
    }
}
