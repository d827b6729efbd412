package io.github.dlpack4j.onnxruntime;

import static io.github.dlpack4j.onnxruntime.Models.PY;
import static org.assertj.core.api.Assertions.assertThat;

import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonDlpack;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** ORT Java run through dlpack4j gives what Python onnxruntime gives on the same model and inputs. */
class CrossCheckTest {
    @ParameterizedTest(name = "{0}")
    @CsvSource({"float32,FLOAT", "float64,DOUBLE", "float16,FLOAT16", "int8,INT8", "int16,INT16", "int32,INT32",
                "int64,INT64", "uint8,UINT8", "bool,BOOL"})
    void anIdentityModelGivesWhatPythonOnnxruntimeGivesForEveryNumpyDtype(String dtype, String onnxType) throws OrtException {
        String name = "identity_" + dtype;
        PY.exec("x_in = (np.arange(12).reshape(4, 3) % 5 - 2).astype(np." + dtype + ")");
        try (OrtSession s = Models.session("identity('" + name + "', T." + onnxType + ")");
             ManagedTensor x = Models.fromPython("x_in")) {
            try (Tensor y = DlpackSession.of(s).run(Map.of("x", x.tensor())).get("y")) {
                assertThat(y.dtype()).isEqualTo(x.tensor().dtype());
                assertThat(y.shape()).containsExactly(4, 3);
                Models.toNumpy("x_java", y);
                assertThat(Models.isTrue("x_java.dtype == x_in.dtype and np.array_equal(x_java, "
                        + "sessions['" + name + "'].run(None, {'x': x_in})[0])")).isTrue();
            }
        } finally {
            PY.exec("del x_in\nx_java = None\ngc.collect()");
        }
    }

    /** numpy has no bfloat16 of its own: the input is a torch tensor, and the output is checked bit for bit. */
    @Test
    void anIdentityModelGivesBfloat16BitForBit() throws OrtException {
        PY.exec("x_bf = (torch.arange(12, dtype=torch.float32).reshape(4, 3) / 3).to(torch.bfloat16)");
        try (OrtSession s = Models.session("identity('identity_bf16', T.BFLOAT16)");
             ManagedTensor x = Models.fromPython("x_bf")) {
            try (Tensor y = DlpackSession.of(s).run(Map.of("x", x.tensor())).get("y");
                 PyObject p = PythonDlpack.toPython(y)) {
                assertThat(y.dtype()).isEqualTo(DataType.BFLOAT16);
                PY.setGlobal("x_java", p);
                assertThat(Models.isTrue("torch.equal(torch.from_dlpack(x_java), x_bf)")).isTrue();
            }
        } finally {
            PY.exec("del x_bf\nx_java = None\ngc.collect()");
        }
    }

    @ParameterizedTest(name = "batch {0}")
    @ValueSource(ints = {1, 7})
    void aGemmReluMlpWithADynamicBatchGivesWhatPythonOnnxruntimeGives(int batch) throws OrtException {
        PY.exec("x_in = np.random.default_rng(" + batch + ").standard_normal((" + batch + ", 256), np.float32)");
        try (OrtSession s = Models.session("mlp('mlp')");
             ManagedTensor x = Models.fromPython("x_in")) {
            try (Tensor y = DlpackSession.of(s).run(Map.of("x", x.tensor())).get("y")) {
                assertThat(y.shape()).containsExactly(batch, 16);
                Models.toNumpy("x_java", y);
                assertThat(Models.isTrue("np.allclose(x_java, sessions['mlp'].run(None, {'x': x_in})[0], "
                        + "rtol=1e-5, atol=1e-5)")).isTrue();
            }
        } finally {
            PY.exec("del x_in\nx_java = None\ngc.collect()");
        }
    }

    @Test
    void aModelWithTwoInputsAndTwoOutputsGivesBothInTheModelsOrder() throws OrtException {
        try (OrtSession s = Models.session("two_in_two_out('two')");
             Tensor a = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
             Tensor b = Tensor.of(new float[] {10, 20, 30, 40, 50, 60}, 2, 3)) {
            Map<String, Tensor> out = DlpackSession.of(s).run(Map.of("b", b, "a", a));
            try (Tensor sum = out.get("sum"); Tensor product = out.get("product")) {
                assertThat(out.keySet()).containsExactly("sum", "product");
                Models.toNumpy("x_sum", sum);
                Models.toNumpy("x_product", product);
                PY.exec("x_a = np.arange(1, 7, dtype=np.float32).reshape(2, 3)\nx_ref = sessions['two'].run(None, "
                        + "{'a': x_a, 'b': x_a * 10})");
                assertThat(Models.isTrue("np.array_equal(x_sum, x_ref[0]) and np.array_equal(x_product, x_ref[1])"))
                        .isTrue();
                assertThat(sum.toFloatArray()).containsExactly(11, 22, 33, 44, 55, 66);
            }
        } finally {
            PY.exec("x_sum = x_product = x_a = x_ref = None\ngc.collect()");
        }
    }

    @Test
    void anEmptyBatchGivesAnEmptyOutputAndAScalarStaysAScalar() throws OrtException {
        try (OrtSession mlp = Models.session("mlp('mlp')");
             OrtSession scalar = Models.session("""
                     model('scalar', [helper.make_node('Neg', ['x'], ['y'])], [io('x', T.FLOAT, [])],
                           [io('y', T.FLOAT, [])])""");
             Tensor none = Tensor.zeros(DataType.FLOAT32, 0, 256);
             Tensor owner = Tensor.of(new float[] {3})) {
            Tensor three = owner.reshape(); // 0-d
            try (Tensor y = DlpackSession.of(mlp).run(Map.of("x", none)).get("y")) {
                assertThat(y.shape()).containsExactly(0, 16);
                assertThat(y.toFloatArray()).isEmpty();
            }
            try (Tensor y = DlpackSession.of(scalar).run(Map.of("x", three)).get("y")) {
                assertThat(y.shape()).isEmpty();
                assertThat(y.getFloat()).isEqualTo(-3);
            }
        }
    }
}
