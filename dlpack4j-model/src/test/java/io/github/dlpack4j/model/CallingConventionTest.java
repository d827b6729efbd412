package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.Map;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PythonException;

import org.junit.jupiter.api.Test;

class CallingConventionTest {
    private static final String CODE = """
            import numpy as np
            import torch

            def pair():
                return lambda a, b: (torch.from_dlpack(a) + torch.from_dlpack(b), torch.from_dlpack(a) * torch.from_dlpack(b))

            def named():
                return lambda a, b: {"product": np.from_dlpack(a) * np.from_dlpack(b), "sum": np.from_dlpack(a) + np.from_dlpack(b)}

            def first():
                return lambda a, b: np.from_dlpack(a)
            """;

    private static PythonModel model(String function, PythonModel.Builder extra) {
        return extra.python(Models.PY).source(CODE, function).build();
    }

    private static Map<String, Tensor> ab(Tensor a, Tensor b) {
        Map<String, Tensor> in = new LinkedHashMap<>();
        in.put("a", a);
        in.put("b", b);
        return in;
    }

    @Test
    void aTuplesItemsAreNamedOutput0Output1WithoutDeclaredOutputs() {
        try (PythonModel model = model("pair", PythonModel.builder());
             Tensor a = Tensor.of(new double[] {1, 2}, 2);
             Tensor b = Tensor.of(new double[] {3, 4}, 2)) {
            Map<String, Tensor> out = model.predict(ab(a, b));
            assertThat(out.keySet()).containsExactly("output0", "output1");
            assertThat(out.get("output0").toDoubleArray()).containsExactly(4, 6);
            assertThat(out.get("output1").toDoubleArray()).containsExactly(3, 8);
            out.values().forEach(Tensor::close);
        }
    }

    @Test
    void aDictKeepsItsKeysWithoutDeclaredOutputs() {
        try (PythonModel model = model("named", PythonModel.builder());
             Tensor a = Tensor.of(new double[] {1, 2}, 2);
             Tensor b = Tensor.of(new double[] {3, 4}, 2)) {
            Map<String, Tensor> out = model.predict(ab(a, b));
            assertThat(out.keySet()).containsExactly("product", "sum");
            out.values().forEach(Tensor::close);
        }
    }

    @Test
    void declaredOutputsTakeADictByNameInDeclaredOrder() {
        try (PythonModel model = model("named", PythonModel.builder()
                .input("a", DataType.FLOAT64, 2).input("b", DataType.FLOAT64, 2)
                .output("sum", DataType.FLOAT64, 2).output("product", DataType.FLOAT64, 2));
             Tensor a = Tensor.of(new double[] {1, 2}, 2);
             Tensor b = Tensor.of(new double[] {3, 4}, 2)) {
            Map<String, Tensor> out = model.predict(Map.of("b", b, "a", a));
            assertThat(out.keySet()).containsExactly("sum", "product");
            assertThat(out.get("sum").toDoubleArray()).containsExactly(4, 6);
            out.values().forEach(Tensor::close);
        }
    }

    @Test
    void declaredInputsReachTheModelInDeclaredOrderWhateverTheMapsOrder() {
        try (PythonModel model = model("first", PythonModel.builder()
                .input("a", DataType.FLOAT64, 2).input("b", DataType.FLOAT64, 2));
             Tensor a = Tensor.of(new double[] {1, 2}, 2);
             Tensor b = Tensor.of(new double[] {3, 4}, 2)) {
            Map<String, Tensor> reversed = new LinkedHashMap<>();
            reversed.put("b", b);
            reversed.put("a", a);
            try (Tensor y = model.predict(reversed).get("output")) {
                assertThat(y.toDoubleArray()).containsExactly(1, 2);
            }
        }
    }

    @Test
    void undeclaredInputsReachTheModelInTheMapsOrder() {
        try (PythonModel model = model("first", PythonModel.builder());
             Tensor a = Tensor.of(new double[] {1, 2}, 2);
             Tensor b = Tensor.of(new double[] {3, 4}, 2)) {
            Map<String, Tensor> in = new LinkedHashMap<>();
            in.put("second", b);
            in.put("first", a);
            try (Tensor y = model.predict(in).get("output")) {
                assertThat(y.toDoubleArray()).containsExactly(3, 4);
            }
        }
    }

    @Test
    void predictOfOneTensorRefusesAModelWithSeveralOutputs() {
        try (PythonModel model = PythonModel.builder().python(Models.PY)
                .source("def make():\n    return lambda x: (x, x)\n", "make").build();
             Tensor x = Tensor.of(new double[] {1}, 1)) {
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("output0").hasMessageContaining("predict(Map)");
        }
    }

    @Test
    void aTupleOfAnotherLengthThanDeclaredFailsTheCall() {
        try (PythonModel model = PythonModel.builder().python(Models.PY)
                .source("def make():\n    return lambda x: (x, x)\n", "make")
                .output("y", DataType.FLOAT64, 1).build();
             Tensor x = Tensor.of(new double[] {1}, 1)) {
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(PythonException.class)
                    .hasMessageContaining("returned 2 outputs; 1 are declared");
        }
    }

    @Test
    void aTorchModelWithOneDeclaredOutputMayReturnItAloneInATupleOrInADictByName() {
        String code = """
                import torch

                def make(kind):
                    def call(x):
                        y = torch.from_dlpack(x) * 2
                        return {"tensor": y, "tuple": (y,), "list": [y], "dict": {"y": y, "other": y}}[kind]
                    return call
                """;
        for (String kind : new String[] {"tensor", "tuple", "list", "dict"}) {
            try (PythonModel model = PythonModel.builder().python(Models.PY).name("one-" + kind).source(code, "make", kind)
                    .output("y", DataType.FLOAT64, 2).build();
                 Tensor x = Tensor.of(new double[] {1, 2}, 2);
                 Tensor y = model.predict(x)) {
                assertThat(y.toDoubleArray()).as(kind).containsExactly(2, 4);
            }
        }
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("one-wrong").source(
                        "import torch\n\ndef make():\n    return lambda x: {'z': torch.from_dlpack(x)}\n", "make")
                .output("y", DataType.FLOAT64, 2).build();
             Tensor x = Tensor.of(new double[] {1, 2}, 2)) {
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(PythonException.class)
                    .hasMessageContaining("returned a dict without ['y']");
        }
    }
}
