package io.github.dlpack4j.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.model.ModelResult;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.SentenceTransformers;
import io.github.dlpack4j.model.Transformers;

import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** An application without Spring AI: its sentence-transformers and transformers-chat entries are PythonModel beans alone. */
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

    @Test
    void aTransformersChatEntryIsAPythonModelBeanThatStreamsAndNoChatModelBeanIsMade() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(Dlpack4jAutoConfiguration.class))
                .withClassLoader(new FilteredClassLoader("org.springframework.ai"))
                .withPropertyValues("dlpack4j.models.tiny.transformers-chat=" + TinyLm.DIR, "dlpack4j.models.tiny.chat.max-new-tokens=8")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBeanDefinitionNames()).contains("tiny").doesNotContain("tinyChatModel");
                    assertThat(context.getBeanNamesForType(TransformersChatModel.class)).isEmpty();
                    PythonModel tiny = context.getBean("tiny", PythonModel.class);
                    String p = TinyLm.PROMPTS.getFirst();
                    StringBuilder text = new StringBuilder();
                    CompletableFuture<Void> done = new CompletableFuture<>();
                    tiny.stream(Map.of(Transformers.MESSAGES, "[{\"role\": \"user\", \"content\": \"" + p + "\"}]",
                            Transformers.PARAMETERS, "{\"max_new_tokens\": 8}")).subscribe(new Flow.Subscriber<>() {
                                @Override
                                public void onSubscribe(Flow.Subscription s) {
                                    s.request(Long.MAX_VALUE);
                                }

                                @Override
                                public void onNext(ModelResult item) {
                                    try (item) {
                                        text.append(item.text(Transformers.DELTA));
                                    }
                                }

                                @Override
                                public void onError(Throwable e) {
                                    done.completeExceptionally(e);
                                }

                                @Override
                                public void onComplete() {
                                    done.complete(null);
                                }
                            });
                    done.get(120, TimeUnit.SECONDS);
                    assertThat(text.toString()).isEqualTo(TinyLm.generate(p, 8).text());
                });
    }
}
