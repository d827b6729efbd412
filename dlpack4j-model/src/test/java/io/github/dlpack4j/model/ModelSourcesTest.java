package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.DataTypeCode;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.DlpackException;
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

    /**
     * A torch model that keeps its input tensors (a cache, a log) holds the Java memory under them:
     * they read their own values after their callers closed them and the model was closed (also a
     * batch's, whose buffer the closed model's thread freed), and the memory goes once Python lets go.
     */
    @Test
    void inputsATorchModelKeepsOutliveTheirCallersAndTheModelAndGoWhenPythonLetsGo() {
        Models.pythonModule("torch_inputs_keeper", """
                kept = []

                def make():
                    def run(x):
                        kept.append(x)
                        return x * 2
                    return run

                def kept_rows():
                    return [row for t in kept for row in t.tolist()]
                """);
        for (int batch : new int[] {0, 8}) {
            Models.PY.exec("import torch_inputs_keeper\ntorch_inputs_keeper.kept.clear()");
            int exports = Dlpack.liveExports();
            long bytes = Dlpack.nativeBytesInUse();
            PythonModel.Builder b = PythonModel.builder().python(Models.PY).factory("torch_inputs_keeper", "make")
                    .torchInputs();
            if (batch > 0) {
                b.batching(batch, Duration.ofMillis(20));
            }
            java.util.List<java.util.List<Double>> expected = new java.util.ArrayList<>();
            try (PythonModel model = b.build()) {
                java.util.List<java.util.concurrent.CompletableFuture<Map<String, Tensor>>> answers = new java.util.ArrayList<>();
                for (int i = 0; i < 4; i++) { // together: with batching, one stacked call
                    expected.add(java.util.List.of(i + 0.5, -i - 0.25));
                    try (Tensor x = Tensor.of(new double[] {i + 0.5, -i - 0.25}, 1, 2)) {
                        answers.add(model.submit(Map.of("x", x)));
                    }
                }
                for (var a : answers) {
                    a.join().values().forEach(Tensor::close);
                }
                assertThat(model.stats().largestBatchRows()).as("one stacked call with batching").isEqualTo(batch > 0 ? 4 : 1);
            }
            try (var rows = Models.PY.eval("torch_inputs_keeper.kept_rows()")) {
                assertThat(rows.toJava()).as("batching %d", batch).isEqualTo(expected);
            }
            Models.PY.exec("torch_inputs_keeper.kept.clear()");
            Models.assertReleasedSince(exports, bytes);
        }
    }

    /**
     * torch's import of a tensor with a negative stride aborts the process (a check inside a C++
     * function that may not throw), and its import of a dtype it lacks fails without running the
     * export's deleter: the torch route refuses both before it exports, and the model answers on.
     */
    @Test
    void aTorchInputTorchCannotTakeFailsItsCallWithoutCrashingOrLeaking() {
        Models.pythonModule("torch_inputs_twice", """
                def make():
                    return lambda x: x * 2
                """);
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        try (PythonModel model = PythonModel.builder().python(Models.PY).factory("torch_inputs_twice", "make")
                .torchInputs().build()) {
            for (int i = 0; i < 3; i++) {
                try (Tensor x = Tensor.of(new float[] {1, 2, 3, 4}, 4); Tensor flipped = x.flip(0)) {
                    assertThatThrownBy(() -> model.predict(flipped)).isInstanceOf(DlpackException.class)
                            .hasMessageContaining("negative stride");
                }
                try (Tensor int4 = Tensor.zeros(new DataType(DataTypeCode.INT, 4, 1), 4, 8)) {
                    assertThatThrownBy(() -> model.predict(int4)).isInstanceOf(DlpackException.class)
                            .hasMessageContaining("int4");
                }
            }
            try (Tensor x = Tensor.of(new float[] {1, 2, 3, 4}, 4); Tensor y = model.predict(x)) {
                assertThat(y.toFloatArray()).containsExactly(2, 4, 6, 8);
            }
        }
        Models.assertReleasedSince(exports, bytes);
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
