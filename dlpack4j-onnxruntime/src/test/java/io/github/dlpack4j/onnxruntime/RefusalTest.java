package io.github.dlpack4j.onnxruntime;

import static io.github.dlpack4j.onnxruntime.Models.PY;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.DeviceType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLTensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Every tensor ORT cannot use in place, and every run it refuses: a clear exception, nothing leaked. */
class RefusalTest {
    private Baseline before;
    private OrtSession identity;
    private DlpackSession session;

    @BeforeEach
    void open() throws OrtException {
        identity = Models.session("identity('identity_f32', T.FLOAT)");
        session = DlpackSession.of(identity);
        before = Baseline.now();
    }

    @AfterEach
    void nothingIsLeft() throws OrtException {
        identity.close();
        PY.exec("""
                for _n in [n for n in globals() if n.startswith('x_')]:
                    del globals()[_n]
                gc.collect()""");
        before.assertBack();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"UINT16", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "FLOAT8_E4M3FN", "FLOAT8_E5M2",
                            "FLOAT6_E2M3FN", "FLOAT4_E2M1FN"})
    void aTypeOrtJavaCannotTakeFromMemoryIsRefusedByNameWithTheTypesItTakes(String name) throws Exception {
        DataType dtype = (DataType) DataType.class.getField(name).get(null);
        try (Tensor x = Tensor.zeros(dtype, 2, 4)) {
            assertThatThrownBy(() -> OrtTensors.toOnnxTensor(x)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(dtype.toString()).hasMessageContaining("float32").hasMessageContaining("convert");
            assertThatThrownBy(() -> session.run(Map.of("x", x))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("input 'x' is " + dtype);
        }
    }

    @Test
    void aTensorOnAnotherDeviceIsRefused() {
        try (Tensor cpu = Tensor.of(new float[] {1, 2, 3}, 1, 3)) {
            MemorySegment p = Dlpack.exportVersioned(cpu).reinterpret(DLManagedTensorVersioned.SIZE);
            p.set(ValueLayout.JAVA_INT, DLManagedTensorVersioned.DL_TENSOR + DLTensor.DEVICE, DeviceType.CUDA.code());
            try (ManagedTensor onCuda = ManagedTensor.adoptVersioned(p)) {
                assertThatThrownBy(() -> session.run(Map.of("x", onCuda.tensor())))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("input 'x' lives on cuda:0").hasMessageContaining("CPU");
            }
        }
    }

    @Test
    void aTensorThatIsNotCompactIsRefusedUntilTheCallerAsksForACopy() throws OrtException {
        try (Tensor x = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 3, 2)) {
            Tensor transposed = x.transpose();
            assertThatThrownBy(() -> session.run(Map.of("x", transposed))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("not compact").hasMessageContaining("copy()");
            try (Tensor copy = transposed.copy(); Tensor y = session.run(Map.of("x", copy)).get("y")) {
                assertThat(y.toFloatArray()).containsExactly(1, 3, 5, 2, 4, 6);
            }
        }
    }

    @Test
    void aReadOnlyTensorIsAnInputButNeverAPinnedOutput() throws OrtException {
        PY.exec("x_ro = np.ones((1, 3), np.float32)\nx_ro.flags.writeable = False");
        try (ManagedTensor ro = Models.fromPython("x_ro");
             Tensor out = Tensor.zeros(DataType.FLOAT32, 1, 3)) {
            assertThat(ro.tensor().isReadOnly()).isTrue();
            session.run(Map.of("x", ro.tensor()), Map.of("y", out));
            assertThat(out.toFloatArray()).containsExactly(1, 1, 1);
            assertThatThrownBy(() -> session.run(Map.of("x", out), Map.of("y", ro.tensor())))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("output 'y' is read-only").hasMessageContaining("writable");
            assertThatThrownBy(() -> session.run(Map.of("x", out), Map.of("y", out.readOnly())))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("read-only");
        }
    }

    @Test
    void aTensorTooLargeForAJavaBufferIsRefusedBeforeItIsTouched() {
        // 4 GiB that are never read: the refusal comes first.
        MemorySegment nowhere = MemorySegment.ofAddress(4096).reinterpret(1L << 32);
        try (Tensor huge = Tensor.wrap(nowhere, DataType.FLOAT32, 1L << 28, 4)) {
            assertThatThrownBy(() -> OrtTensors.toOnnxTensor(huge)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("4294967296 bytes").hasMessageContaining("split");
        }
    }

    @Test
    void aClosedTensorIsRefused() {
        Tensor x = Tensor.of(new float[] {1, 2, 3}, 1, 3);
        x.close();
        assertThatThrownBy(() -> session.run(Map.of("x", x))).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void aMissingOrUnknownNameIsRefusedWithTheModelsNames() {
        try (Tensor x = Tensor.of(new float[] {1, 2, 3}, 1, 3)) {
            assertThatThrownBy(() -> session.run(Map.of("z", x))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("unknown input 'z'").hasMessageContaining("[x]");
            assertThatThrownBy(() -> session.run(Map.of())).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("missing input [x]");
            assertThatThrownBy(() -> session.run(Map.of("x", x), Map.of("out", x)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unknown output 'out'")
                    .hasMessageContaining("[y]");
            assertThatThrownBy(() -> session.run(Map.of("x", x), Map.of()))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no outputs given");
        }
    }

    @Test
    void aShapeTheModelRefusesIsOrtsExceptionWithItsMessageAndTheDeclaredShapes() {
        try (Tensor x = Tensor.of(new float[] {1, 2, 3, 4}, 1, 4)) {
            assertThatThrownBy(() -> session.run(Map.of("x", x))).isInstanceOf(OrtException.class)
                    .hasMessageContaining("x: float32 [1, 4]").hasMessageContaining("the model declares inputs")
                    .hasMessageContaining("ORT said").hasMessageContaining("Got invalid dimensions for input: x")
                    .satisfies(e -> assertThat(((OrtException) e).getCode())
                            .isEqualTo(OrtException.OrtErrorCode.ORT_INVALID_ARGUMENT))
                    .cause().isInstanceOf(OrtException.class);
        }
    }

    @Test
    void aDtypeTheModelRefusesIsOrtsExceptionWithItsMessage() {
        try (Tensor x = Tensor.of(new double[] {1, 2, 3}, 1, 3)) {
            assertThatThrownBy(() -> session.run(Map.of("x", x))).isInstanceOf(OrtException.class)
                    .hasMessageContaining("x: float64 [1, 3]").hasMessageContaining("Unexpected input data type");
        }
    }

    @Test
    void aPinnedOutputOfTheWrongShapeIsOrtsExceptionAndLeavesTheTensorUnwritten() {
        try (Tensor x = Tensor.of(new float[] {1, 2, 3}, 1, 3);
             Tensor out = Tensor.zeros(DataType.FLOAT32, 1, 4)) {
            assertThatThrownBy(() -> session.run(Map.of("x", x), Map.of("y", out))).isInstanceOf(OrtException.class)
                    .hasMessageContaining("outputs {y: float32 [1, 4]}").hasMessageContaining("invalid dimensions");
            assertThat(out.toFloatArray()).containsOnly(0);
        }
    }

    @Test
    void anOutputOfATypeWithoutADlpackViewIsRefusedAndReleased() throws OrtException {
        try (OrtSession toUint16 = Models.session("""
                model('cast_u16', [helper.make_node('Cast', ['x'], ['y'], to=T.UINT16)], [io('x', T.FLOAT, [3])],
                      [io('y', T.UINT16, [3])])""");
             Tensor x = Tensor.of(new float[] {1, 2, 3})) {
            assertThatThrownBy(() -> DlpackSession.of(toUint16).run(Map.of("x", x)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("output 'y' is ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16").hasMessageContaining("getValue");
        }
    }
}
