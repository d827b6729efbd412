package io.github.dlpack4j.langchain4j;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

/**
 * The tests' interpreter and models: all-MiniLM-L6-v2's real weights and an untrained cross-encoder
 * over them, made by {@code scripts/minilm}, and sentence-transformers run directly on them.
 */
final class Minilm {
    static final Python PY = Python.start();
    static final Path EMBEDDING = dir("dlpack4j.minilm", "");
    static final Path CROSS_ENCODER = dir("dlpack4j.cross-encoder", " --cross-encoder");
    /** Real sentences of 5 to 60 words, non-ASCII included. */
    static final List<String> SENTENCES = List.of(
            "A cat sits on the mat.",
            "A kitten rests on a rug.",
            "The stock market fell sharply today after the central bank raised interest rates again.",
            "DLPack lets frameworks share tensors without copying their memory.",
            "Zürich's café serves crème brûlée every Sunday morning, and the queue reaches the corner.",
            "東京は日本の首都です。",
            "Close the tensor once you are done with it, or the memory stays held until the cleaner runs.",
            "Why is the sky blue? Because air scatters short wavelengths of sunlight more than long ones, "
                    + "so blue light reaches our eyes from every direction of the sky.");

    private Minilm() {
    }

    private static Path dir(String property, String option) {
        String d = System.getProperty(property);
        if (d == null || !Files.isDirectory(Path.of(d))) {
            throw new IllegalStateException("no model directory at " + d + " (system property " + property
                    + "): make it with scripts/minilm" + option + ", which scripts/test runs before the tests");
        }
        return Path.of(d);
    }

    /** sentence-transformers' own {@code encode} of {@code texts} on the same directory, run directly. */
    static float[][] encode(List<String> texts) {
        PY.setGlobal("texts", texts);
        PY.setGlobal("minilm_dir", EMBEDDING.toString());
        PY.exec("""
                if "direct_minilm" not in globals():
                    import dlpack4j_text
                    dlpack4j_text._torchvision_usable()
                    from sentence_transformers import SentenceTransformer
                    direct_minilm = SentenceTransformer(minilm_dir, device="cpu")
                """);
        try (PyObject v = PY.eval("direct_minilm.encode(texts).tolist()")) {
            return rows((List<?>) v.toJava());
        }
    }

    static float[][] rows(List<?> rows) {
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

    static double cosine(float[] a, float[] b) {
        double dot = 0;
        double na = 0;
        double nb = 0;
        for (int i = 0; i < a.length; i++) {
            dot += (double) a[i] * b[i];
            na += (double) a[i] * a[i];
            nb += (double) b[i] * b[i];
        }
        return dot / Math.sqrt(na * nb);
    }

    static List<String> words(int count, int seed) {
        String[] vocabulary = ("tensor memory share python java model batch thread queue embed search vector "
                + "cat kitten market river mountain coffee language sentence token device kernel stream").split(" ");
        List<String> w = new ArrayList<>(count);
        java.util.Random r = new java.util.Random(seed);
        for (int i = 0; i < count; i++) {
            w.add(vocabulary[r.nextInt(vocabulary.length)]);
        }
        return w;
    }
}
