package io.github.dlpack4j.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

/**
 * all-MiniLM-L6-v2's real weights, made by {@code scripts/minilm} (the pom passes their directory as
 * the system property {@code dlpack4j.minilm}), and sentence-transformers run directly on them in the
 * tests' interpreter.
 */
final class Minilm {
    static final Python PY = Python.start();
    static final Path DIR = dir();
    /** Sentences of 0 to 300 words: an empty one, non-ASCII ones, one longer than the model's 256 tokens. */
    static final List<String> SENTENCES = List.of(
            "A cat sits on the mat.",
            "A kitten rests on a rug.",
            "The stock market fell sharply today after the central bank raised interest rates again.",
            "",
            "Zürich's café serves crème brûlée every Sunday morning, and the queue reaches the corner.",
            "東京は日本の首都です。",
            "tensor memory share ".repeat(100).strip());

    private Minilm() {
    }

    private static Path dir() {
        String d = System.getProperty("dlpack4j.minilm");
        if (d == null || !Files.isDirectory(Path.of(d))) {
            throw new IllegalStateException("no all-MiniLM-L6-v2 directory at " + d + " (system property dlpack4j.minilm):"
                    + " make it with scripts/minilm, which scripts/test runs before the tests");
        }
        return Path.of(d);
    }

    /** Loads sentence-transformers' own model of {@link #DIR} once, after a model bean loaded the library's helpers. */
    private static void loadDirect() {
        PY.setGlobal("spring_minilm_dir", DIR.toString());
        PY.exec("""
                if "spring_direct_minilm" not in globals():
                    import dlpack4j_text
                    dlpack4j_text._torchvision_usable()
                    from sentence_transformers import SentenceTransformer
                    spring_direct_minilm = SentenceTransformer(spring_minilm_dir, device="cpu")
                """);
    }

    /** {@return sentence-transformers' own {@code encode} of {@code texts}, run directly} */
    static float[][] encode(List<String> texts) {
        loadDirect();
        PY.setGlobal("spring_texts", texts);
        try (PyObject v = PY.eval("spring_direct_minilm.encode(spring_texts).tolist()")) {
            List<?> rows = (List<?>) v.toJava();
            float[][] out = new float[rows.size()][];
            for (int i = 0; i < out.length; i++) {
                List<?> row = (List<?>) rows.get(i);
                out[i] = new float[row.size()];
                for (int j = 0; j < row.size(); j++) {
                    out[i][j] = ((Number) row.get(j)).floatValue();
                }
            }
            return out;
        }
    }

    /** {@return the tokens the model reads of {@code texts} together, special tokens included, after truncation} */
    static long tokens(List<String> texts) {
        loadDirect();
        PY.setGlobal("spring_texts", texts);
        try (PyObject v = PY.eval("int(spring_direct_minilm.tokenize(spring_texts)['attention_mask'].sum())")) {
            return v.asLong();
        }
    }

    /** Asserts that {@code got} equals {@code expected} element-wise within 1e-5. */
    static void assertEmbedding(String text, float[] got, float[] expected) {
        assertThat(got).as(text).hasSize(384);
        for (int j = 0; j < got.length; j++) {
            assertThat(got[j]).as("%s, element %d", text, j).isCloseTo(expected[j], within(1e-5f));
        }
    }
}
