package io.github.dlpack4j.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import java.util.List;

import dev.langchain4j.data.segment.TextSegment;
import io.github.dlpack4j.python.PyObject;

import org.junit.jupiter.api.Test;

/** A cross-encoder as LangChain4j's ScoringModel, against {@code CrossEncoder.predict} run directly. */
class PythonScoringModelTest {
    private static final String QUERY = "how do I share a tensor with Python?";

    /** {@code CrossEncoder(dir).predict} of (query, passage) pairs, run directly. */
    private static List<?> predict(List<String> passages) {
        Minilm.PY.setGlobal("cross_dir", Minilm.CROSS_ENCODER.toString());
        Minilm.PY.setGlobal("query", QUERY);
        Minilm.PY.setGlobal("passages", passages);
        Minilm.PY.exec("""
                if "direct_cross" not in globals():
                    from sentence_transformers import CrossEncoder
                    direct_cross = CrossEncoder(cross_dir, device="cpu")
                """);
        try (PyObject v = Minilm.PY.eval("direct_cross.predict([(query, p) for p in passages]).tolist()")) {
            return (List<?>) v.toJava();
        }
    }

    @Test
    void scoreAllEqualsCrossEncoderPredictOnTheSamePairs() {
        try (PythonScoringModel reranker = PythonScoringModel.crossEncoder(Minilm.CROSS_ENCODER).python(Minilm.PY)
                .chunk(3).build()) {
            List<Double> scores = reranker.scoreAll(Minilm.SENTENCES.stream().map(TextSegment::from).toList(), QUERY)
                    .content();
            List<?> expected = predict(Minilm.SENTENCES);
            assertThat(scores).hasSize(Minilm.SENTENCES.size());
            for (int i = 0; i < scores.size(); i++) {
                assertThat(scores.get(i)).isCloseTo(((Number) expected.get(i)).doubleValue(), within(1e-5));
            }
        }
    }

    @Test
    void scoreOfOneTextIsScoreAllsAndCallsFromThreadsBatch() throws Exception {
        try (PythonScoringModel reranker = PythonScoringModel.crossEncoder(Minilm.CROSS_ENCODER).python(Minilm.PY)
                .batching(32, Duration.ofMillis(20)).build();
             var threads = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
            List<?> expected = predict(Minilm.SENTENCES);
            List<java.util.concurrent.Future<Double>> own = Minilm.SENTENCES.stream()
                    .map(s -> threads.submit(() -> reranker.score(s, QUERY).content())).toList();
            for (int i = 0; i < own.size(); i++) {
                assertThat(own.get(i).get()).isCloseTo(((Number) expected.get(i)).doubleValue(), within(1e-5));
            }
            assertThat(reranker.score(TextSegment.from(Minilm.SENTENCES.get(0)), QUERY).content())
                    .isCloseTo(((Number) expected.get(0)).doubleValue(), within(1e-5));
            assertThat(reranker.scoreAll(List.of(), QUERY).content()).isEmpty();
        }
    }
}
