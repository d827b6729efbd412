package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PythonException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ModelSourcesTest {
    private static final float[] X = {1, 2, 3, 4, -1, 0.5f, 2, -3};

    @Test
    void torchScriptModelAnswersAsTorchDoes() {
        Path f = Models.linearTorchScript();
        double[] expected = Models.torchAnswer("torch.jit.load(FILE)", f, X, 2);
        try (PythonModel model = PythonModel.builder().python(Models.PY).torchScript(f)
                .input("x", DataType.FLOAT32, -1, 4).output("y", DataType.FLOAT32, -1, 3).build();
             Tensor x = Tensor.of(X, 2, 4);
             Tensor y = model.predict(x)) {
            assertThat(model.name()).isEqualTo("linear");
            assertThat(y.shape()).containsExactly(2, 3);
            assertThat(y.toDoubleArray()).containsExactly(expected, within(1e-6));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"FLOAT32", "FLOAT64", "INT64", "UINT8", "BOOL"})
    void aTorchScriptModelTakesAndGivesEachDtype(String name) throws Exception {
        DataType dtype = (DataType) DataType.class.getField(name).get(null);
        Models.pythonModule("twice_module", """
                import torch

                class Twice(torch.nn.Module):
                    def forward(self, x: torch.Tensor) -> torch.Tensor:
                        return torch.cat([x, x])
                """);
        Path f = Models.save("twice.pt", "import torch, twice_module\ntorch.jit.save(torch.jit.script(twice_module.Twice()), path)");
        try (PythonModel model = PythonModel.builder().python(Models.PY).torchScript(f)
                .input("x", dtype, -1, 3).output("y", dtype, -1, 3).build();
             Tensor x = Tensor.zeros(dtype, 1, 3)) {
            x.setLong(1, 0, 0);
            x.setLong(0, 0, 1);
            x.setLong(1, 0, 2);
            try (Tensor y = model.predict(x)) {
                assertThat(y.dtype()).isEqualTo(dtype);
                assertThat(y.toLongArray()).containsExactly(1, 0, 1, 1, 0, 1);
            }
        }
    }

    @Test
    void exportedProgramModelAnswersAsTorchDoes() {
        Path f = Models.linearExported(true);
        double[] expected = Models.torchAnswer("torch.export.load(FILE).module()", f, X, 2);
        try (PythonModel model = PythonModel.builder().python(Models.PY).exportedProgram(f)
                .input("x", DataType.FLOAT32, -1, 4).batching(8, Duration.ZERO).build();
             Tensor x = Tensor.of(X, 2, 4);
             Tensor y = model.predict(x)) {
            assertThat(y.toDoubleArray()).containsExactly(expected, within(1e-6));
        }
    }

    @Test
    void exportedProgramWithAStaticDimZeroRefusesBatchingAtBuild() {
        PythonModel.Builder b = PythonModel.builder().python(Models.PY).exportedProgram(Models.linearExported(false))
                .batching(8, Duration.ZERO);
        assertThatThrownBy(b::build).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("cannot batch").hasMessageContaining("static dim 0");
    }

    @Test
    void factoryModelIsTheCallableItsFunctionReturns() {
        Models.pythonModule("scaling_factory", """
                import numpy as np

                def make(k):
                    return lambda x: np.from_dlpack(x) * k
                """);
        try (PythonModel model = PythonModel.builder().python(Models.PY).factory("scaling_factory", "make", 3).build();
             Tensor x = Tensor.of(new double[] {1, 2}, 2);
             Tensor y = model.predict(x)) {
            assertThat(model.name()).isEqualTo("scaling_factory.make");
            assertThat(y.toDoubleArray()).containsExactly(3, 6);
        }
    }

    @Test
    void sourceModelGetsDlpackObjectsThatAnyConsumerViews() {
        String code = """
                import numpy as np
                import torch

                def make():
                    def run(x):
                        assert not isinstance(x, torch.Tensor) and hasattr(x, "__dlpack__"), type(x)
                        return np.from_dlpack(x) + torch.from_dlpack(x).numpy()
                    return run
                """;
        try (PythonModel model = PythonModel.builder().python(Models.PY).source(code, "make").build();
             Tensor x = Tensor.of(new long[] {1, 2, 3}, 3);
             Tensor y = model.predict(x)) {
            assertThat(y.toLongArray()).containsExactly(2, 4, 6);
        }
    }

    @Test
    void aFactoryWithTorchInputsGetsTorchTensorsOverTheCallersMemory() {
        Models.pythonModule("torch_inputs_factory", """
                import torch

                def make():
                    def run(x):
                        assert type(x) is torch.Tensor, type(x)
                        return {"ptr": torch.tensor([x.data_ptr()]), "y": x * 2}
                    return run
                """);
        try (PythonModel model = PythonModel.builder().python(Models.PY).factory("torch_inputs_factory", "make")
                .torchInputs().build();
             Tensor x = Tensor.of(new float[] {1, 2, 3}, 3)) {
            Map<String, Tensor> out = model.predict(Map.of("x", x));
            try {
                assertThat(out.get("ptr").getLong(0)).isEqualTo(x.dataPointer());
                assertThat(out.get("y").toFloatArray()).containsExactly(2, 4, 6);
            } finally {
                out.values().forEach(Tensor::close);
            }
        }
    }

    @Test
    void torchModelsRunUnderInferenceMode() {
        String code = """
                import torch

                def make():
                    return lambda x: torch.tensor([torch.is_inference_mode_enabled()])
                """;
        try (PythonModel model = PythonModel.builder().python(Models.PY).source(code, "make").build();
             Tensor x = Tensor.of(new float[] {1}, 1);
             Tensor y = model.predict(x)) {
            assertThat(y.toBooleanArray()).containsExactly(true);
        }
    }

    @Test
    void sourceErrorsShowTheModelsOwnLines() {
        String code = """
                def make():
                    return lambda x: 1 / 0
                """;
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("broken").source(code, "make").build();
             Tensor x = Tensor.of(new float[] {1}, 1)) {
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(PythonException.class)
                    .hasMessageContaining("ZeroDivisionError").hasMessageContaining("<model broken>");
        }
    }

    @Test
    void aModelThatFailsItsWarmUpFailsBuild() {
        PythonModel.Builder b = PythonModel.builder().python(Models.PY)
                .source("def make():\n    return lambda x: x.no_such_method()\n", "make")
                .input("x", DataType.FLOAT32, -1, 2);
        assertThatThrownBy(b::build).isInstanceOf(PythonException.class).hasMessageContaining("AttributeError");
    }

    @Test
    void builderWithoutASourceSaysWhatToGive() {
        assertThatThrownBy(() -> PythonModel.builder().build()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("torchScript, exportedProgram, factory or source");
    }

    @Test
    void outputsStayReadableAfterTheModelIsClosed() {
        Tensor y;
        try (PythonModel model = PythonModel.builder().python(Models.PY).torchScript(Models.linearTorchScript()).build();
             Tensor x = Tensor.of(X, 2, 4)) {
            y = model.predict(Map.of("x", x)).get("output");
        }
        try (y) {
            assertThat(y.shape()).containsExactly(2, 3);
            assertThat(y.toFloatArray()).hasSize(6);
        }
    }
}
