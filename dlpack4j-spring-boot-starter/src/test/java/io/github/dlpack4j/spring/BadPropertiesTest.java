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
    void anEntryWithoutASourceNamesTheFiveSources() {
        FailureAnalysis f = failure(AT + "workers=2");
        assertThat(f.getDescription()).isEqualTo("The model property " + AT + "torchscript is not set: the model has no source");
        assertThat(f.getAction()).isEqualTo("Set one of " + AT + "torchscript, " + AT + "exported-program, " + AT + "factory, "
                + AT + "sentence-transformers or " + AT + "transformers-chat.");
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

    @Test
    void aSentenceTransformersDirectoryAndATorchScriptFileAreTwoSources() {
        FailureAnalysis f = failure(AT + "torchscript=" + TestModels.TORCHSCRIPT, AT + "sentence-transformers=" + Minilm.DIR);
        assertThat(f.getDescription()).contains("the model has two sources");
        assertThat(f.getAction()).isEqualTo("Keep one of " + AT + "torchscript and " + AT + "sentence-transformers.");
    }

    @Test
    void aMissingSentenceTransformersDirectoryNamesItsPropertyAndPath() {
        FailureAnalysis f = failure(AT + "sentence-transformers=/nowhere/all-MiniLM-L6-v2");
        assertThat(f.getDescription()).isEqualTo("The model property " + AT
                + "sentence-transformers is '/nowhere/all-MiniLM-L6-v2': no such directory");
        assertThat(f.getAction()).contains("a sentence-transformers model's directory").contains("classpath:");
    }

    @Test
    void aMissingClasspathDirectoryFailsAsAMissingDirectoryDoes() {
        FailureAnalysis f = failure(AT + "sentence-transformers=classpath:models/nowhere");
        assertThat(f.getDescription()).isEqualTo("The model property " + AT
                + "sentence-transformers is 'classpath:models/nowhere': no such directory");
    }

    @Test
    void aFileWhereTheDirectoryShouldBeIsRefused() {
        FailureAnalysis f = failure(AT + "sentence-transformers=" + TestModels.TORCHSCRIPT);
        assertThat(f.getDescription()).isEqualTo("The model property " + AT + "sentence-transformers is '"
                + TestModels.TORCHSCRIPT + "': a file, not a directory");
    }

    @Test
    void aDirectoryWithoutModulesJsonOrConfigJsonIsNotASentenceTransformersModel() {
        FailureAnalysis f = failure(AT + "sentence-transformers=" + TestModels.DIR);
        assertThat(f.getDescription()).isEqualTo("The model property " + AT + "sentence-transformers is '" + TestModels.DIR
                + "': not a sentence-transformers model's directory (it has neither modules.json nor config.json)");
    }

    @Test
    void aSentenceTransformersModelRefusesDeclaredInputsOutputsAndTorchInputs() {
        String st = AT + "sentence-transformers=" + Minilm.DIR;
        FailureAnalysis inputs = failure(st, AT + "inputs[0].name=x", AT + "inputs[0].dtype=float32");
        assertThat(inputs.getDescription()).isEqualTo("The model property " + AT
                + "inputs is 'x': a sentence-transformers model declares its own inputs and outputs");
        assertThat(inputs.getAction()).isEqualTo("Remove " + AT + "inputs: the model's input is its texts (text), its outputs"
                + " the embeddings (embedding) and each text's token count (tokens).");
        assertThat(failure(st, AT + "outputs[0].name=y", AT + "outputs[0].dtype=float32").getDescription())
                .startsWith("The model property " + AT + "outputs is 'y'");
        assertThat(failure(st, AT + "torch-inputs=true").getDescription())
                .isEqualTo("The model property " + AT + "torch-inputs is 'true': a sentence-transformers model takes texts, not tensors");
        assertThat(failure(st, AT + "args=a").getDescription())
                .isEqualTo("The model property " + AT + "args is '[a]': only a factory takes args");
    }

    @Test
    void aSentenceTransformersModelChecksItsWorkersQueueBatchingAndTimeoutAsAnyModel() {
        String st = AT + "sentence-transformers=" + Minilm.DIR;
        assertThat(failure(st, AT + "workers=0").getAction()).isEqualTo("Set " + AT + "workers to 1 or more.");
        assertThat(failure(st, AT + "max-queue=0").getAction()).isEqualTo("Set " + AT + "max-queue to 1 or more.");
        assertThat(failure(st, AT + "batching.max-rows=0").getDescription())
                .isEqualTo("The model property " + AT + "batching.max-rows is '0': a batch has at least 1 row");
        assertThat(failure(st, AT + "timeout=0s").getDescription()).contains(AT + "timeout");
    }

    @Test
    void anEmbeddingModelBeanNameThatIsTakenNamesTheEntryAndTheFix() {
        List<FailureAnalysis> analyses = new ArrayList<>();
        runner.withBean("mlpEmbeddingModel", String.class, () -> "taken")
                .withPropertyValues(AT + "sentence-transformers=" + Minilm.DIR)
                .run(context -> {
                    assertThat(context).hasFailed();
                    analyses.add(new ModelPropertyFailureAnalyzer().analyze(context.getStartupFailure()));
                });
        FailureAnalysis f = analyses.getFirst();
        assertThat(f).isNotNull();
        assertThat(f.getDescription()).startsWith("The model property dlpack4j.models.mlp")
                .contains("a bean named mlpEmbeddingModel exists already");
        assertThat(f.getAction()).contains("Rename the entry dlpack4j.models.mlp");
    }

    @Test
    void aStreamTimeoutOfZeroIsRefusedForAnyModel() {
        FailureAnalysis f = failure(linearWith(AT + "stream-timeout=0s"));
        assertThat(f.getDescription()).isEqualTo("The model property " + AT + "stream-timeout is 'PT0S': a deadline is more than zero");
        assertThat(f.getAction()).isEqualTo("Set " + AT + "stream-timeout to more than zero, e.g. 2m, or remove it for no deadline.");
    }

    @Test
    void aChatDirectoryAndASentenceTransformersDirectoryAreTwoSources() {
        FailureAnalysis f = failure(AT + "sentence-transformers=" + Minilm.DIR, AT + "transformers-chat=" + TinyLm.DIR);
        assertThat(f.getDescription()).contains("the model has two sources");
        assertThat(f.getAction()).isEqualTo("Keep one of " + AT + "sentence-transformers and " + AT + "transformers-chat.");
    }

    @Test
    void aMissingChatDirectoryNamesItsPropertyAndPathAndWhatToGive() {
        FailureAnalysis f = failure(AT + "transformers-chat=/nowhere/tiny-lm");
        assertThat(f.getDescription()).isEqualTo("The model property " + AT + "transformers-chat is '/nowhere/tiny-lm': no such directory");
        assertThat(f.getAction()).isEqualTo("Set " + AT + "transformers-chat to a transformers causal language model's directory"
                + " (a path, or classpath:name for one on the class path), the one AutoModelForCausalLM.from_pretrained(path)"
                + " and AutoTokenizer.from_pretrained(path) load.");
        assertThat(failure(AT + "transformers-chat=classpath:models/nowhere").getDescription())
                .isEqualTo("The model property " + AT + "transformers-chat is 'classpath:models/nowhere': no such directory");
    }

    @Test
    void aFileOrADirectoryWithoutConfigJsonIsNotAChatModelsDirectory() {
        assertThat(failure(AT + "transformers-chat=" + TestModels.TORCHSCRIPT).getDescription()).isEqualTo("The model property " + AT
                + "transformers-chat is '" + TestModels.TORCHSCRIPT + "': a file, not a directory");
        assertThat(failure(AT + "transformers-chat=" + TestModels.DIR).getDescription()).isEqualTo("The model property " + AT
                + "transformers-chat is '" + TestModels.DIR + "': not a transformers model's directory (it has no config.json)");
    }

    @Test
    void aChatModelRefusesDeclaredInputsOutputsTorchInputsArgsAndBatching() {
        String lm = AT + "transformers-chat=" + TinyLm.DIR;
        FailureAnalysis inputs = failure(lm, AT + "inputs[0].name=x", AT + "inputs[0].dtype=float32");
        assertThat(inputs.getDescription()).isEqualTo("The model property " + AT
                + "inputs is 'x': a transformers-chat model declares its own inputs and outputs");
        assertThat(inputs.getAction()).isEqualTo("Remove " + AT + "inputs: the model's inputs are the messages (messages) and the"
                + " generation's parameters (parameters), its outputs each piece of text (delta) and, last, how it finished (finish).");
        assertThat(failure(lm, AT + "outputs[0].name=y", AT + "outputs[0].dtype=float32").getDescription())
                .startsWith("The model property " + AT + "outputs is 'y'");
        assertThat(failure(lm, AT + "torch-inputs=true").getDescription())
                .isEqualTo("The model property " + AT + "torch-inputs is 'true': a transformers-chat model takes texts, not tensors");
        assertThat(failure(lm, AT + "args=a").getDescription())
                .isEqualTo("The model property " + AT + "args is '[a]': only a factory takes args");
        assertThat(failure(lm, AT + "batching.max-rows=0").getDescription())
                .isEqualTo("The model property " + AT + "batching.max-rows is '0': a batch has at least 1 row");
    }

    @Test
    void aChatModelChecksItsWorkersQueueAndDeadlinesAsAnyModel() {
        String lm = AT + "transformers-chat=" + TinyLm.DIR;
        assertThat(failure(lm, AT + "workers=0").getAction()).isEqualTo("Set " + AT + "workers to 1 or more.");
        assertThat(failure(lm, AT + "max-queue=0").getAction()).isEqualTo("Set " + AT + "max-queue to 1 or more.");
        assertThat(failure(lm, AT + "timeout=0s").getDescription()).contains(AT + "timeout");
        assertThat(failure(lm, AT + "stream-timeout=-1s").getDescription()).contains(AT + "stream-timeout");
    }

    @Test
    void chatDefaultsOutOfRangeNameTheirPropertyAndTheFix() {
        String lm = AT + "transformers-chat=" + TinyLm.DIR;
        FailureAnalysis tokens = failure(lm, AT + "chat.max-new-tokens=0");
        assertThat(tokens.getDescription()).isEqualTo("The model property " + AT + "chat.max-new-tokens is '0': at least 1");
        assertThat(tokens.getAction()).isEqualTo("Set " + AT + "chat.max-new-tokens to 1 or more.");
        FailureAnalysis temperature = failure(lm, AT + "chat.temperature=-1");
        assertThat(temperature.getDescription()).isEqualTo("The model property " + AT
                + "chat.temperature is '-1.0': a temperature is 0 (greedy) or more");
        assertThat(temperature.getAction()).isEqualTo("Set " + AT + "chat.temperature to 0 for greedy decoding, or more to sample, e.g. 0.7.");
        for (String topP : List.of("0", "1.5")) {
            FailureAnalysis f = failure(lm, AT + "chat.top-p=" + topP);
            assertThat(f.getDescription()).as(topP).isEqualTo("The model property " + AT + "chat.top-p is '" + Double.parseDouble(topP)
                    + "': a probability mass is more than 0 and at most 1");
            assertThat(f.getAction()).isEqualTo("Set " + AT + "chat.top-p to more than 0 and at most 1 (1 keeps every token), e.g. 0.9.");
        }
    }

    @Test
    void chatDefaultsOnAnEntryThatIsNoChatModelAreRefused() {
        FailureAnalysis f = failure(linearWith(AT + "chat.max-new-tokens=5"));
        assertThat(f.getDescription()).isEqualTo("The model property " + AT
                + "chat.max-new-tokens is '5': only a transformers-chat model takes chat defaults");
        assertThat(f.getAction()).isEqualTo("Remove " + AT + "chat, or set " + AT + "transformers-chat to a causal language model's"
                + " directory instead of the entry's other source.");
    }

    @Test
    void aChatModelBeanNameThatIsTakenNamesTheEntryAndTheFix() {
        List<FailureAnalysis> analyses = new ArrayList<>();
        runner.withBean("mlpChatModel", String.class, () -> "taken")
                .withPropertyValues(AT + "transformers-chat=" + TinyLm.DIR)
                .run(context -> {
                    assertThat(context).hasFailed();
                    analyses.add(new ModelPropertyFailureAnalyzer().analyze(context.getStartupFailure()));
                });
        FailureAnalysis f = analyses.getFirst();
        assertThat(f).isNotNull();
        assertThat(f.getDescription()).startsWith("The model property dlpack4j.models.mlp")
                .contains("a bean named mlpChatModel exists already");
        assertThat(f.getAction()).contains("Rename the entry dlpack4j.models.mlp");
    }
}
