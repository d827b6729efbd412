package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;

import org.junit.jupiter.api.Test;

/** A model with declared inputs and outputs: its warm-up, and an output of another dtype. */
class DeclaredModelTest {
    @Test
    void buildRunsTheModelOnceOnZerosWithAnyExtentAsOneAndDoesNotCountIt() {
        Models.pythonModule("warm_probe", """
                import numpy as np

                calls = []  # (shape, dtype, sum) of each input of each call


                def make():
                    def run(a, b):
                        xs = [np.from_dlpack(a), np.from_dlpack(b)]
                        calls.append([[list(x.shape), str(x.dtype), x.sum().item()] for x in xs])
                        return xs[0] * 2
                    return run
                """);
        for (boolean batched : List.of(false, true)) {
            Models.PY.exec("import warm_probe\nwarm_probe.calls.clear()");
            PythonModel.Builder b = PythonModel.builder().python(Models.PY).factory("warm_probe", "make")
                    .input("a", DataType.FLOAT32, -1, 3).input("b", DataType.INT64, -1, -1, 2);
            if (batched) {
                b.batching(8, Duration.ofMillis(1));
            }
            try (PythonModel model = b.build();
                 PyObject calls = Models.PY.eval("warm_probe.calls")) {
                assertThat(calls.toJava()).as("batched: " + batched).isEqualTo(List.of(List.of(
                        List.of(List.of(1L, 3L), "float32", 0.0), List.of(List.of(1L, 1L, 2L), "int64", 0L))));
                ModelStats s = model.stats();
                assertThat(List.of(s.requests(), s.answered(), s.batches())).containsOnly(0L);
                assertThat(s.largestBatchRows()).isZero();
            }
        }
    }

    @Test
    void anOutputOfAnotherDtypeThanDeclaredFailsTheCallNamingIt() {
        try (PythonModel model = PythonModel.builder().python(Models.PY).source(
                "import numpy as np\ndef make():\n    return lambda x: np.from_dlpack(x).astype(np.float64)\n", "make")
                .output("y", DataType.FLOAT32, -1, 3).build();
             Tensor x = Tensor.zeros(DataType.FLOAT32, 2, 3)) {
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("output y is float64 [2, 3]").hasMessageContaining("declared float32 [-1, 3]");
            ModelStats s = model.stats();
            assertThat(s.failed()).isEqualTo(1);
            assertThat(s.answered()).isZero();
        }
    }
}
