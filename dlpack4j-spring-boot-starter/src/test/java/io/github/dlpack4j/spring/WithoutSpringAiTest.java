package io.github.dlpack4j.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;

import io.github.dlpack4j.model.ModelResult;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.SentenceTransformers;

import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** An application without Spring AI: its sentence-transformers entries are PythonModel beans alone. */
class WithoutSpringAiTest {
    @Test
    void aSentenceTransformersEntryIsAPythonModelBeanAndNoEmbeddingModelBeanIsMade() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(Dlpack4jAutoConfiguration.class))
                .withClassLoader(new FilteredClassLoader("org.springframework.ai"))
                .withPropertyValues("dlpack4j.models.minilm.sentence-transformers=" + Minilm.DIR)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBeanDefinitionNames()).contains("minilm").doesNotContain("minilmEmbeddingModel");
                    assertThat(context.getBeanNamesForType(SentenceTransformersEmbeddingModel.class)).isEmpty();
                    PythonModel minilm = context.getBean("minilm", PythonModel.class);
                    String text = Minilm.SENTENCES.getFirst();
                    try (ModelResult r = minilm.run(Map.of(SentenceTransformers.TEXT, List.of(text)))) {
                        Minilm.assertEmbedding(text, r.tensor(SentenceTransformers.EMBEDDING).toFloatArray(),
                                Minilm.encode(List.of(text))[0]);
                    }
                });
    }
}
