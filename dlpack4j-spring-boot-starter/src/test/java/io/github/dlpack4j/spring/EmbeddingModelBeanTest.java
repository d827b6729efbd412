package io.github.dlpack4j.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import io.github.dlpack4j.model.ModelStats;
import io.github.dlpack4j.model.PythonModel;
import io.micrometer.core.instrument.MeterRegistry;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.ai.content.Media;
import org.springframework.ai.document.Document;
import org.springframework.ai.embedding.Embedding;
import org.springframework.ai.embedding.EmbeddingModel;
import org.springframework.ai.embedding.EmbeddingOptions;
import org.springframework.ai.embedding.EmbeddingRequest;
import org.springframework.ai.embedding.EmbeddingResponse;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.util.MimeTypeUtils;

/**
 * all-MiniLM-L6-v2 from {@code application.yml} alone ({@code src/test/resources/minilm}), in an
 * application with Spring Boot's auto-configuration and Spring AI on the class path: its Spring AI
 * {@link EmbeddingModel} bean against sentence-transformers run directly.
 */
class EmbeddingModelBeanTest {
    private static ConfigurableApplicationContext context;
    private static EmbeddingModel embeddings;
    private static PythonModel model;

    /** An application that takes the embedding model by type, as a service of its own would. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Application {
        @Bean
        Search search(EmbeddingModel embeddingModel) {
            return new Search(embeddingModel);
        }
    }

    /** A bean of the application's that needs an embedding model. */
    record Search(EmbeddingModel embeddingModel) {
    }

    /** {@return the application, started from {@code minilm/application.yml}} */
    static ConfigurableApplicationContext start() {
        SpringApplication app = new SpringApplicationBuilder(Application.class).web(WebApplicationType.NONE)
                .properties("spring.config.location=classpath:/minilm/application.yml").build();
        app.setRegisterShutdownHook(false);
        return app.run();
    }

    @BeforeAll
    static void startApplication() {
        context = start();
        embeddings = context.getBean(EmbeddingModel.class);
        model = context.getBean("minilm", PythonModel.class);
    }

    @AfterAll
    static void stopApplication() {
        context.close();
    }

    @Test
    void theEntryMakesAPythonModelBeanAndAnEmbeddingModelBeanNamedAfterIt() {
        assertThat(context.getBeansOfType(PythonModel.class)).containsOnlyKeys("minilm");
        assertThat(context.getBeansOfType(EmbeddingModel.class)).containsOnlyKeys("minilmEmbeddingModel");
        assertThat(embeddings).isInstanceOf(SentenceTransformersEmbeddingModel.class);
        assertThat(((SentenceTransformersEmbeddingModel) embeddings).model()).isSameAs(model);
        assertThat(context.getBean(Search.class).embeddingModel()).as("injected by type").isSameAs(embeddings);
    }

    @Test
    void theModelIsNamedAfterTheEntryAndRunsOnItsOneWorkerThread() {
        assertThat(model.name()).isEqualTo("minilm");
        assertThat(Thread.getAllStackTraces().keySet()).extracting(Thread::getName)
                .contains("dlpack4j-model-minilm-0").doesNotContain("dlpack4j-model-minilm-1");
    }

    @Test
    void dimensionsAre384AsTheModelSaysWithoutEmbeddingAnything() {
        long before = model.stats().requests();
        assertThat(embeddings.dimensions()).isEqualTo(384);
        assertThat(model.stats().requests()).isEqualTo(before);
    }

    @Test
    void embedOfOneTextEqualsSentenceTransformersEncode() {
        for (String text : Minilm.SENTENCES) {
            Minilm.assertEmbedding(text, embeddings.embed(text), Minilm.encode(List.of(text))[0]);
        }
    }

    @Test
    void embedOfAListEqualsEncodeOfTheListInOrder() {
        List<float[]> got = embeddings.embed(Minilm.SENTENCES);
        float[][] expected = Minilm.encode(Minilm.SENTENCES);
        assertThat(got).hasSize(expected.length);
        for (int i = 0; i < expected.length; i++) {
            Minilm.assertEmbedding(Minilm.SENTENCES.get(i), got.get(i), expected[i]);
        }
    }

    @Test
    void embedOfADocumentEmbedsItsTextWithoutItsMetadata() {
        String text = Minilm.SENTENCES.getFirst();
        Document d = new Document(text, Map.of("source", "mats.txt"));
        Minilm.assertEmbedding(text, embeddings.embed(d), Minilm.encode(List.of(text))[0]);
    }

    @Test
    void aDocumentWithoutTextIsRefusedBeforeTheModelRuns() {
        Document image = new Document(Media.builder().mimeType(MimeTypeUtils.IMAGE_PNG).data(new byte[] {1, 2, 3}).build(), Map.of());
        long before = model.stats().requests();
        assertThatThrownBy(() -> embeddings.embed(image)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("has no text");
        assertThat(model.stats().requests()).isEqualTo(before);
    }

    @Test
    void callEmbedsEveryInstructionInOneModelCallWithItsIndexAndTheTokensRead() {
        ModelStats before = model.stats();
        EmbeddingResponse r = embeddings.call(new EmbeddingRequest(Minilm.SENTENCES, EmbeddingOptions.builder().build()));
        ModelStats after = model.stats();
        assertThat(after.requests() - before.requests()).as("requests").isEqualTo(1);
        List<Embedding> results = r.getResults();
        float[][] expected = Minilm.encode(Minilm.SENTENCES);
        assertThat(results).hasSize(expected.length);
        for (int i = 0; i < expected.length; i++) {
            assertThat(results.get(i).getIndex()).isEqualTo(i);
            Minilm.assertEmbedding(Minilm.SENTENCES.get(i), results.get(i).getOutput(), expected[i]);
        }
        long tokens = Minilm.tokens(Minilm.SENTENCES);
        assertThat(r.getMetadata().getModel()).isEqualTo("minilm");
        assertThat(r.getMetadata().getUsage().getPromptTokens()).isEqualTo((int) tokens);
        assertThat(r.getMetadata().getUsage().getCompletionTokens()).isZero();
        assertThat(r.getMetadata().getUsage().getTotalTokens()).isEqualTo((int) tokens);
    }

    @Test
    void aRequestWithTheModelsDimensionsIsAnsweredAndOneWithOthersRefused() {
        EmbeddingOptions same = EmbeddingOptions.builder().dimensions(384).build();
        assertThat(embeddings.call(new EmbeddingRequest(List.of("a cat"), same)).getResult().getOutput()).hasSize(384);
        EmbeddingOptions other = EmbeddingOptions.builder().dimensions(256).build();
        assertThatThrownBy(() -> embeddings.call(new EmbeddingRequest(List.of("a cat"), other)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("256").hasMessageContaining("384");
    }

    @Test
    void anEmptyRequestIsAnsweredWithoutAModelCall() {
        long before = model.stats().requests();
        EmbeddingResponse r = embeddings.call(new EmbeddingRequest(List.of(), null));
        assertThat(r.getResults()).isEmpty();
        assertThat(r.getMetadata().getUsage().getTotalTokens()).isZero();
        assertThat(model.stats().requests()).isEqualTo(before);
    }

    @Test
    void textsEmbeddedFromManyThreadsAtOnceAreBatchedIntoFewerModelCalls() throws Exception {
        int threads = 8;
        CyclicBarrier start = new CyclicBarrier(threads);
        ModelStats before = model.stats();
        List<Future<float[]>> got = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            for (int i = 0; i < threads; i++) {
                String text = Minilm.SENTENCES.get(i % Minilm.SENTENCES.size());
                got.add(pool.submit(() -> {
                    start.await();
                    return embeddings.embed(text);
                }));
            }
            for (int i = 0; i < threads; i++) {
                String text = Minilm.SENTENCES.get(i % Minilm.SENTENCES.size());
                Minilm.assertEmbedding(text, got.get(i).get(), Minilm.encode(List.of(text))[0]);
            }
        }
        ModelStats after = model.stats();
        assertThat(after.requests() - before.requests()).isEqualTo(threads);
        assertThat(after.batches() - before.batches()).as("model calls").isLessThan(threads);
    }

    @Test
    void healthIsUpAndTheMetersCountTheEmbeddingModelsCallsUnderTheEntrysName() {
        Health h = context.getBean("dlpack4jHealthIndicator", HealthIndicator.class).health();
        assertThat(h.getStatus()).isEqualTo(Status.UP);
        assertThat(h.getDetails()).containsEntry("minilm", Map.of("state", "ready", "queued", 0));
        MeterRegistry registry = context.getBean(MeterRegistry.class);
        double before = registry.get("dlpack4j.model.requests").tags("model", "minilm", "outcome", "answered").counter().count();
        embeddings.embed(List.of("one", "two"));
        assertThat(registry.get("dlpack4j.model.requests").tags("model", "minilm", "outcome", "answered").counter().count())
                .isEqualTo(before + 1);
        assertThat(registry.get("dlpack4j.model.run").tag("model", "minilm").timer().count()).isPositive();
        assertThat(registry.get("dlpack4j.model.queue.depth").tag("model", "minilm").gauge().value()).isZero();
    }

    @Test
    void closingTheApplicationClosesTheModelAndTheEmbeddingModelThenRefusesCalls() {
        ConfigurableApplicationContext other = start();
        PythonModel m = other.getBean("minilm", PythonModel.class);
        EmbeddingModel e = other.getBean(EmbeddingModel.class);
        assertThat(e.dimensions()).isEqualTo(384);
        assertThat(m.stats().requests()).as("calls before the first embedding").isZero();
        other.close();
        assertThat(m.isClosed()).isTrue();
        assertThatThrownBy(() -> e.embed("a cat")).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }
}
