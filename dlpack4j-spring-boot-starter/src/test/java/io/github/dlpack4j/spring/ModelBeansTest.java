package io.github.dlpack4j.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.TensorSpec;
import io.github.dlpack4j.python.Python;

import org.junit.jupiter.api.Test;
import org.springframework.ai.embedding.EmbeddingModel;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

class ModelBeansTest {
    private static final float[] ROW = {1, 2, 3, 4};

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(Dlpack4jAutoConfiguration.class));

    private static String[] linear(String name, String sourceProperty, String location) {
        String at = "dlpack4j.models." + name + ".";
        return new String[] {at + sourceProperty + "=" + location,
            at + "inputs[0].name=x", at + "inputs[0].dtype=float32", at + "inputs[0].shape=-1,4",
            at + "outputs[0].name=y", at + "outputs[0].dtype=float32", at + "outputs[0].shape=-1,3"};
    }

    private static void answersAsTorch(PythonModel model) {
        try (Tensor x = Tensor.of(ROW, 1, 4); Tensor y = model.predict(x)) {
            float[] got = y.toFloatArray();
            double[] want = TestModels.torchAnswer(ROW);
            assertThat(got).hasSize(want.length);
            for (int i = 0; i < want.length; i++) {
                assertThat((double) got[i]).isCloseTo(want[i], within(1e-6));
            }
        }
    }

    @Test
    void aTorchScriptFileBecomesAModelBeanNamedAfterItsEntryThatAnswersAsTorchDoes() {
        runner.withPropertyValues(linear("mlp", "torchscript", TestModels.TORCHSCRIPT.toString())).run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(Python.class).hasSingleBean(PythonModel.class);
            PythonModel mlp = context.getBean("mlp", PythonModel.class);
            assertThat(mlp.name()).isEqualTo("mlp");
            assertThat(mlp.inputs()).containsExactly(new TensorSpec("x", DataType.FLOAT32, new long[] {-1, 4}));
            assertThat(mlp.outputs()).containsExactly(new TensorSpec("y", DataType.FLOAT32, new long[] {-1, 3}));
            answersAsTorch(mlp);
        });
    }

    @Test
    void anExportedProgramBecomesAModelBeanWithItsBatchingWorkersQueueAndTimeout() {
        String at = "dlpack4j.models.exported.";
        runner.withPropertyValues(linear("exported", "exported-program", TestModels.EXPORTED.toString()))
                .withPropertyValues(at + "batching.max-rows=8", at + "batching.max-delay=2ms", at + "workers=2",
                        at + "max-queue=5", at + "timeout=5s")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    PythonModel model = context.getBean("exported", PythonModel.class);
                    answersAsTorch(model);
                    assertThat(Thread.getAllStackTraces().keySet()).extracting(Thread::getName)
                            .contains("dlpack4j-model-exported-0", "dlpack4j-model-exported-1");
                });
    }

    @Test
    void aClasspathResourceInAFolderIsLoadedWhereItIs() {
        runner.withClassLoader(TestModels.inFolder())
                .withPropertyValues(linear("mlp", "torchscript", "classpath:linear.pt"))
                .run(context -> answersAsTorch(context.getBean("mlp", PythonModel.class)));
    }

    @Test
    void aClasspathResourceInsideAJarIsCopiedToATempFileFirst() {
        runner.withClassLoader(TestModels.inJar(TestModels.TORCHSCRIPT))
                .withPropertyValues(linear("mlp", "torchscript", "classpath:models/linear.pt"))
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    answersAsTorch(context.getBean("mlp", PythonModel.class));
                });
    }

    @Test
    void aFactoryIsCalledWithItsArgs() {
        runner.withPropertyValues("dlpack4j.models.double.factory=spring_test_models:scale", "dlpack4j.models.double.args=2")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    try (Tensor x = Tensor.of(new float[] {1, 2}, 2);
                         Tensor y = context.getBean("double", PythonModel.class).predict(x)) {
                        assertThat(y.toFloatArray()).containsExactly(2f, 4f);
                    }
                });
    }

    @Test
    void aFactoryWithTorchInputsGetsTorchTensorsAndWithoutItDlpack4jsOwn() {
        runner.withPropertyValues("dlpack4j.models.torch.factory=spring_test_models:kind",
                        "dlpack4j.models.torch.torch-inputs=true", "dlpack4j.models.plain.factory=spring_test_models:kind")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    try (Tensor x = Tensor.of(new float[] {1, 2}, 2);
                         Tensor torch = context.getBean("torch", PythonModel.class).predict(x);
                         Tensor plain = context.getBean("plain", PythonModel.class).predict(x)) {
                        assertThat(torch.toBooleanArray()).containsExactly(true);
                        assertThat(plain.toBooleanArray()).containsExactly(false);
                    }
                });
    }

    @Test
    void twoModelsAreInjectedByTheirQualifiers() {
        runner.withPropertyValues(linear("mlp", "torchscript", TestModels.TORCHSCRIPT.toString()))
                .withPropertyValues("dlpack4j.models.double.factory=spring_test_models:scale", "dlpack4j.models.double.args=2")
                .withBean(TwoModels.class)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    TwoModels two = context.getBean(TwoModels.class);
                    assertThat(two.mlp.name()).isEqualTo("mlp");
                    assertThat(two.doubler.name()).isEqualTo("double");
                    assertThat(context.getBeansOfType(PythonModel.class)).containsOnlyKeys("mlp", "double");
                });
    }

    @Test
    void aSingleModelIsInjectedWithoutAQualifier() {
        runner.withPropertyValues(linear("mlp", "torchscript", TestModels.TORCHSCRIPT.toString()))
                .withBean(OneModel.class)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(OneModel.class).model.name()).isEqualTo("mlp");
                });
    }

    @Test
    void aTorchScriptModelHasNoEmbeddingModelBeside() {
        runner.withPropertyValues(linear("mlp", "torchscript", TestModels.TORCHSCRIPT.toString()))
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(EmbeddingModel.class));
    }

    @Test
    void noModelBeanIsMadeWhenThePropertyTreeIsEmpty() {
        runner.run(context -> {
            assertThat(context).hasNotFailed().doesNotHaveBean(PythonModel.class).hasSingleBean(Python.class);
        });
    }

    @Test
    void theModelsAreClosedWithTheContext() {
        PythonModel[] kept = new PythonModel[1];
        runner.withPropertyValues(linear("mlp", "torchscript", TestModels.TORCHSCRIPT.toString()))
                .run(context -> {
                    kept[0] = context.getBean(PythonModel.class);
                    assertThat(kept[0].isClosed()).isFalse();
                });
        assertThat(kept[0].isClosed()).isTrue();
    }

    /** A bean that takes two models by qualifier. */
    static final class TwoModels {
        final PythonModel mlp;
        final PythonModel doubler;

        TwoModels(@Qualifier("mlp") PythonModel mlp, @Qualifier("double") PythonModel doubler) {
            this.mlp = mlp;
            this.doubler = doubler;
        }
    }

    /** A bean that takes the one model by type. */
    static final class OneModel {
        final PythonModel model;

        OneModel(PythonModel model) {
            this.model = model;
        }
    }
}
