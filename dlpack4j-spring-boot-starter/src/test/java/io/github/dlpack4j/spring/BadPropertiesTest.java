package io.github.dlpack4j.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

class BadPropertiesTest {
    private static final String AT = "dlpack4j.models.mlp.";

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(Dlpack4jAutoConfiguration.class));

    /** The start-up failure of the context with {@code properties}, as Spring Boot reports it. */
    private FailureAnalysis failure(String... properties) {
        List<FailureAnalysis> analyses = new ArrayList<>();
        runner.withPropertyValues(properties).run(context -> {
            assertThat(context).hasFailed();
            analyses.add(new ModelPropertyFailureAnalyzer().analyze(context.getStartupFailure()));
        });
        assertThat(analyses.getFirst()).as("a failure the analyzer explains").isNotNull();
        return analyses.getFirst();
    }

    private static String[] linearWith(String... more) {
        List<String> p = new ArrayList<>(List.of(AT + "torchscript=" + TestModels.TORCHSCRIPT,
                AT + "inputs[0].name=x", AT + "inputs[0].dtype=float32", AT + "inputs[0].shape=-1,4"));
        p.addAll(List.of(more));
        return p.toArray(String[]::new);
    }

    @Test
    void aModelNamedAfterABeanThatExistsAlreadyNamesItsEntryAndTheFix() {
        FailureAnalysis f = failure("dlpack4j.models.python.torchscript=" + TestModels.TORCHSCRIPT);
        assertThat(f.getDescription()).startsWith("The model property dlpack4j.models.python")
                .contains("a bean named python exists already");
        assertThat(f.getAction()).contains("Rename the entry dlpack4j.models.python");
    }

    @Test
    void anUnknownDtypeNamesItsPropertyAndTheDtypesThereAre() {
        FailureAnalysis f = failure(linearWith(AT + "inputs[0].dtype=flaot32"));
        assertThat(f.getDescription()).isEqualTo("The model property " + AT + "inputs[0].dtype is 'flaot32': not a dtype");
        assertThat(f.getAction()).startsWith("Set " + AT + "inputs[0].dtype to one of ").contains("float32", "bfloat16", "int64");
    }

    @Test
    void aNegativeExtentOtherThanMinusOneNamesItsDimension() {
        FailureAnalysis f = failure(linearWith(AT + "inputs[0].shape=-2,4"));
        assertThat(f.getDescription()).isEqualTo("The model property " + AT
                + "inputs[0].shape[0] is '-2': an extent is -1 (any) or at least 0");
        assertThat(f.getAction()).isEqualTo("Set " + AT + "inputs[0].shape[0] to -1 for any extent, or to the extent itself.");
    }

    @Test
    void aMissingFileNamesItsPropertyAndPath() {
        FailureAnalysis f = failure(AT + "torchscript=/nowhere/mlp.pt");
        assertThat(f.getDescription()).isEqualTo("The model property " + AT + "torchscript is '/nowhere/mlp.pt': no such file");
        assertThat(f.getAction()).contains("an existing file").contains("classpath:");
    }

    @Test
    void aMissingClasspathResourceFailsAsAMissingFileDoes() {
        FailureAnalysis f = failure(AT + "exported-program=classpath:nowhere.pt2");
        assertThat(f.getDescription()).isEqualTo("The model property " + AT + "exported-program is 'classpath:nowhere.pt2': no such file");
    }

    @Test
    void twoSourcesNameBothProperties() {
        FailureAnalysis f = failure(linearWith(AT + "factory=spring_test_models:scale"));
        assertThat(f.getDescription()).contains("the model has two sources");
        assertThat(f.getAction()).isEqualTo("Keep one of " + AT + "torchscript and " + AT + "factory.");
    }

    @Test
    void anEntryWithoutASourceNamesTheThreeSources() {
        FailureAnalysis f = failure(AT + "workers=2");
        assertThat(f.getDescription()).isEqualTo("The model property " + AT + "torchscript is not set: the model has no source");
        assertThat(f.getAction()).isEqualTo("Set one of " + AT + "torchscript, " + AT + "exported-program or " + AT + "factory.");
    }

    @Test
    void aFactoryWithoutItsFunctionAsksForModuleColonFunction() {
        FailureAnalysis f = failure(AT + "factory=spring_test_models");
        assertThat(f.getDescription()).isEqualTo("The model property " + AT + "factory is 'spring_test_models': not module:function");
    }

    @Test
    void zeroWorkersAZeroQueueAndZeroRowsAreRefused() {
        assertThat(failure(linearWith(AT + "workers=0")).getAction()).isEqualTo("Set " + AT + "workers to 1 or more.");
        assertThat(failure(linearWith(AT + "max-queue=0")).getAction()).isEqualTo("Set " + AT + "max-queue to 1 or more.");
        assertThat(failure(linearWith(AT + "batching.max-rows=0")).getDescription())
                .isEqualTo("The model property " + AT + "batching.max-rows is '0': a batch has at least 1 row");
        assertThat(failure(linearWith(AT + "timeout=0s")).getDescription()).contains(AT + "timeout");
    }

    @Test
    void anInputWithoutADtypeNamesTheMissingProperty() {
        FailureAnalysis f = failure(AT + "torchscript=" + TestModels.TORCHSCRIPT, AT + "inputs[0].name=x");
        assertThat(f.getDescription()).isEqualTo("The model property " + AT
                + "inputs[0].dtype is not set: every input and output has a dtype");
    }
}
