package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class SignatureTest {
    private static final String IDENTITY = """
            import numpy as np

            def make():
                return lambda x: np.from_dlpack(x).copy()
            """;
    private static final PythonModel MODEL = PythonModel.builder().python(Models.PY).name("identity")
            .source(IDENTITY, "make").input("x", DataType.FLOAT32, -1, 3).output("y", DataType.FLOAT32, -1, 3).build();

    @AfterAll
    static void close() {
        MODEL.close();
    }

    @Test
    void anInputOfAnotherDtypeNamesTheInputAndBothDtypes() {
        try (Tensor x = Tensor.zeros(DataType.FLOAT64, 2, 3)) {
            assertThatThrownBy(() -> MODEL.predict(x)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("input x is float64 [2, 3]").hasMessageContaining("declared float32 [-1, 3]");
        }
        assertThat(MODEL.stats().requests()).isZero();
    }

    @Test
    void anInputOfAnotherRankOrExtentNamesBothShapes() {
        try (Tensor rank = Tensor.zeros(DataType.FLOAT32, 3);
             Tensor extent = Tensor.zeros(DataType.FLOAT32, 2, 4)) {
            assertThatThrownBy(() -> MODEL.predict(rank)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("[3]").hasMessageContaining("[-1, 3]");
            assertThatThrownBy(() -> MODEL.predict(extent)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("[2, 4]").hasMessageContaining("[-1, 3]");
        }
    }

    @Test
    void aMissingOrUnknownInputIsNamed() {
        try (Tensor x = Tensor.zeros(DataType.FLOAT32, 2, 3)) {
            assertThatThrownBy(() -> MODEL.predict(Map.of("z", x))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("no input z").hasMessageContaining("[x]");
            assertThatThrownBy(() -> MODEL.predict(Map.of())).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("input x is missing");
        }
    }

    @Test
    void submitThrowsABadSignatureAtOnce() {
        try (Tensor x = Tensor.zeros(DataType.INT64, 2, 3)) {
            assertThatThrownBy(() -> MODEL.submit(Map.of("x", x))).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void anOutputOfAnotherShapeThanDeclaredFailsTheCallNamingIt() {
        try (PythonModel model = PythonModel.builder().python(Models.PY).source(
                "import numpy as np\ndef make():\n    return lambda x: np.zeros((len(np.from_dlpack(x)) * 2, 3), np.float32)\n",
                "make").output("y", DataType.FLOAT32, 1, 3).build();
             Tensor x = Tensor.zeros(DataType.FLOAT32, 2, 3)) {
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("output y is float32 [4, 3]").hasMessageContaining("declared float32 [1, 3]");
            assertThat(model.stats().failed()).isEqualTo(1);
        }
    }

    @Test
    void withBatchingAnOutputWhoseDimZeroIsNotTheRowsFailsTheCall() {
        try (PythonModel model = PythonModel.builder().python(Models.PY).source(
                "import numpy as np\ndef make():\n    return lambda x: np.zeros((1, 3), np.float32)\n", "make")
                .batching(4, Duration.ZERO).build();
             Tensor x = Tensor.zeros(DataType.FLOAT32, 2, 3)) {
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("output output has shape [1, 3] for a batch of 2 rows");
        }
    }

    @Test
    void predictOfOneTensorRefusesAModelWithSeveralInputs() {
        try (PythonModel model = PythonModel.builder().python(Models.PY)
                .source("def make():\n    return lambda a, b: a\n", "make")
                .input("a", DataType.FLOAT32, 1).input("b", DataType.FLOAT32, 1).build();
             Tensor x = Tensor.zeros(DataType.FLOAT32, 1)) {
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("[a, b]");
        }
    }

    @Test
    void theModelShowsItsDeclaredSignature() {
        assertThat(MODEL.inputs()).containsExactly(new TensorSpec("x", DataType.FLOAT32, new long[] {-1, 3}));
        assertThat(MODEL.outputs()).containsExactly(new TensorSpec("y", DataType.FLOAT32, new long[] {-1, 3}));
    }

    @Test
    void aClosedModelRefusesCallsWithIllegalStateException() {
        PythonModel model = PythonModel.builder().python(Models.PY).source(IDENTITY, "make").build();
        model.close();
        model.close();
        try (Tensor x = Tensor.zeros(DataType.FLOAT32, 1)) {
            assertThatThrownBy(() -> model.predict(x)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            assertThatThrownBy(() -> model.submit(Map.of("x", x))).isInstanceOf(IllegalStateException.class);
        }
    }
}
