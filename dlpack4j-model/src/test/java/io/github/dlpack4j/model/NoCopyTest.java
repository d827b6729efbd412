package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;

import org.junit.jupiter.api.Test;

class NoCopyTest {
    @Test
    void withoutBatchingTorchReadsTheCallersMemoryAndJavaReadsTorchsOutput() {
        String code = """
                import torch

                def make():
                    def run(x):
                        t = torch.from_dlpack(x)
                        y = t * 2
                        return {"input_ptr": torch.tensor([t.data_ptr()]), "y": y, "y_ptr": torch.tensor([y.data_ptr()])}
                    return run
                """;
        try (PythonModel model = PythonModel.builder().python(Models.PY).source(code, "make").build();
             Tensor x = Tensor.of(new float[] {1, 2, 3}, 3)) {
            Map<String, Tensor> out = model.predict(Map.of("x", x));
            assertThat(out.get("input_ptr").getLong(0)).isEqualTo(x.dataPointer());
            assertThat(out.get("y").dataPointer()).isEqualTo(out.get("y_ptr").getLong(0));
            assertThat(out.get("y").toFloatArray()).containsExactly(2, 4, 6);
            out.values().forEach(Tensor::close);
        }
    }

    @Test
    void aTorchScriptModelGetsATorchTensorOverTheCallersMemory() {
        Models.pythonModule("identity_module", """
                import torch

                class Identity(torch.nn.Module):
                    def forward(self, x: torch.Tensor) -> torch.Tensor:
                        return x
                """);
        Models.save("identity.pt", "import torch, identity_module\ntorch.jit.save(torch.jit.script(identity_module.Identity()), path)");
        try (PythonModel model = PythonModel.builder().python(Models.PY).torchScript(Models.file("identity.pt"))
                .input("x", DataType.FLOAT32, -1, 2).build();
             Tensor x = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 3, 2);
             Tensor y = model.predict(x)) {
            assertThat(y.dataPointer()).as("the torch tensor the model returned is over x's memory").isEqualTo(x.dataPointer());
            assertThat(y.toFloatArray()).containsExactly(1, 2, 3, 4, 5, 6);
        }
    }
}
