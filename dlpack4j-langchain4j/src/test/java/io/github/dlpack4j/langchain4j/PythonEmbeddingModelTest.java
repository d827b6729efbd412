package io.github.dlpack4j.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.langchain4j.data.embedding.Embedding;
import dev.langchain4j.data.segment.TextSegment;
import dev.langchain4j.model.embedding.EmbeddingModel;
import dev.langchain4j.model.embedding.onnx.allminilml6v2.AllMiniLmL6V2EmbeddingModel;
import dev.langchain4j.model.embedding.request.EmbeddingRequest;
import dev.langchain4j.model.embedding.response.EmbeddingResponse;
import dev.langchain4j.model.output.Response;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.python.PyObject;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** all-MiniLM-L6-v2's real weights as LangChain4j's EmbeddingModel, against sentence-transformers and LangChain4j's own. */
class PythonEmbeddingModelTest {
    private static PythonEmbeddingModel model;

    @BeforeAll
    static void load() {
        model = PythonEmbeddingModel.sentenceTransformers(Minilm.EMBEDDING).python(Minilm.PY)
                .batching(64, Duration.ofMillis(5)).build();
    }

    @AfterAll
    static void close() {
        model.close();
    }

    private static List<TextSegment> segments(List<String> texts) {
        return texts.stream().map(TextSegment::from).toList();
    }

    @Test
    void embedAllEqualsSentenceTransformersEncodeOnTheSameTexts() {
        List<Embedding> embeddings = model.embedAll(segments(Minilm.SENTENCES)).content();
        float[][] expected = Minilm.encode(Minilm.SENTENCES);
        assertThat(embeddings).hasSize(Minilm.SENTENCES.size());
        for (int i = 0; i < expected.length; i++) {
            float[] v = embeddings.get(i).vector();
            assertThat(v).hasSize(384);
            for (int j = 0; j < v.length; j++) {
                assertThat(v[j]).as("text %d, element %d", i, j).isCloseTo(expected[i][j], within(1e-5f));
            }
        }
    }

    @Test
    void embeddingsEqualLangChain4jsOwnAllMiniLmL6V2() {
        EmbeddingModel onnx = new AllMiniLmL6V2EmbeddingModel();
        List<Embedding> ours = model.embedAll(segments(Minilm.SENTENCES)).content();
        List<Embedding> theirs = onnx.embedAll(segments(Minilm.SENTENCES)).content();
        for (int i = 0; i < ours.size(); i++) {
            assertThat(Minilm.cosine(ours.get(i).vector(), theirs.get(i).vector())).as(Minilm.SENTENCES.get(i))
                    .isGreaterThanOrEqualTo(0.9999);
        }
    }

    @Test
    void similarSentencesAreCloseAndUnrelatedOnesFar() {
        List<Embedding> e = model.embedAll(segments(Minilm.SENTENCES.subList(0, 3))).content();
        double catKitten = Minilm.cosine(e.get(0).vector(), e.get(1).vector());
        double catMarket = Minilm.cosine(e.get(0).vector(), e.get(2).vector());
        assertThat(catKitten).isGreaterThan(0.5);
        assertThat(catMarket).isLessThan(0.2);
    }

    @Test
    void dimensionComesFromTheModelWithoutEmbeddingAnything() {
        try (PythonEmbeddingModel fresh = PythonEmbeddingModel.sentenceTransformers(Minilm.EMBEDDING).python(Minilm.PY)
                .name("minilm-dimension").build()) {
            assertThat(fresh.dimension()).isEqualTo(384);
            assertThat(fresh.modelName()).isEqualTo("minilm-dimension");
            assertThat(fresh.model().stats().requests()).as("calls made to find the dimension").isZero();
        }
    }

    @Test
    void embedOfOneStringAndOfOneSegmentAreEmbedAllsFirst() {
        String text = Minilm.SENTENCES.get(3);
        float[] all = model.embedAll(segments(List.of(text))).content().getFirst().vector();
        assertThat(model.embed(text).content().vector()).containsExactly(all);
        assertThat(model.embed(TextSegment.from(text)).content().vector()).containsExactly(all);
    }

    @Test
    void theEmbeddingRequestRouteAnswersAsEmbedAll() {
        EmbeddingResponse response = model.embed(EmbeddingRequest.builder().inputs("a cat", "a kitten").build());
        List<Embedding> all = model.embedAll(segments(List.of("a cat", "a kitten"))).content();
        assertThat(response.embeddings()).extracting(Embedding::vector)
                .containsExactly(all.get(0).vector(), all.get(1).vector());
    }

    @Test
    void theResponseCountsTheTokensTheModelRead() {
        Response<List<Embedding>> r = model.embedAll(segments(Minilm.SENTENCES));
        Minilm.encode(List.of("load")); // the direct model, for its tokenizer
        Minilm.PY.setGlobal("texts", Minilm.SENTENCES);
        try (PyObject expected = Minilm.PY.eval(
                "sum(len(direct_minilm.tokenizer(t, truncation=True, max_length=256)['input_ids']) for t in texts)")) {
            assertThat(r.tokenUsage().inputTokenCount()).isEqualTo((int) expected.asLong());
        }
    }

    @Test
    void aTextBeyondMaxSeqLengthIsTruncatedAsSentenceTransformersDoes() {
        String longText = String.join(" ", Minilm.words(600, 7));
        Response<Embedding> r = model.embed(longText);
        assertThat(r.tokenUsage().inputTokenCount()).isEqualTo(256);
        float[] expected = Minilm.encode(List.of(longText))[0];
        assertThat(Minilm.cosine(r.content().vector(), expected)).isGreaterThan(0.99999);
    }

    @Test
    void embedAllOfNothingIsNothingAndNeverCallsTheModel() {
        long before = model.model().stats().requests();
        assertThat(model.embedAll(List.of()).content()).isEmpty();
        assertThat(model.model().stats().requests()).isEqualTo(before);
    }

    @Test
    void sixtyFourVirtualThreadsEachGetTheirOwnEmbedding() throws Exception {
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            texts.add(String.join(" ", Minilm.words(5 + i % 20, i)));
        }
        float[][] expected = Minilm.encode(texts);
        try (var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<float[]>> own = new ArrayList<>();
            for (String t : texts) {
                own.add(threads.submit(() -> model.embed(t).content().vector()));
            }
            for (int i = 0; i < texts.size(); i++) {
                assertThat(Minilm.cosine(own.get(i).get(60, TimeUnit.SECONDS), expected[i])).as(texts.get(i))
                        .isGreaterThan(0.99999);
            }
        }
        assertThat(model.model().stats().largestBatchRows()).as("threads' texts in one model call").isGreaterThan(1);
    }

    @Test
    void ofWrapsAModelWithOneTextInputAndOneFloatOutputAndLeavesItOpen() {
        String code = """
                import numpy as np
                def make():
                    return lambda texts: np.array([[len(t), 1.0] for t in texts], dtype=np.float32)
                """;
        try (PythonModel lengths = PythonModel.builder().python(Minilm.PY).name("lengths").source(code, "make")
                .textInput("text").output("vector", DataType.FLOAT32, -1, 2).build()) {
            PythonEmbeddingModel wrapped = PythonEmbeddingModel.of(lengths);
            assertThat(wrapped.dimension()).isEqualTo(2);
            Response<List<Embedding>> r = wrapped.embedAll(segments(List.of("abc", "😀")));
            assertThat(r.content().get(0).vector()).containsExactly(3f, 1f);
            assertThat(r.content().get(1).vector()).containsExactly(1f, 1f);
            assertThat(r.tokenUsage()).as("no token counts from this model").isNull();
            wrapped.close();
            assertThat(lengths.isClosed()).isFalse();
        }
        try (PythonModel noDim = PythonModel.builder().python(Minilm.PY).name("no-dim").source(code, "make")
                .textInput("text").output("vector", DataType.FLOAT32, -1, -1).build()) {
            assertThatThrownBy(() -> PythonEmbeddingModel.of(noDim)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("FLOAT32 [-1, dim] with its dimension declared");
        }
    }
}
