package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonException;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * sentence-transformers models as {@link PythonModel}s, checked against sentence-transformers run
 * directly on the same texts: a small BERT with random weights, a WordPiece tokenizer built with
 * {@code tokenizers}, and {@code max_seq_length} 16, saved by the test itself.
 */
class SentenceTransformersTest {
    private static Path embedder;
    private static Path crossEncoder;
    private static final List<String> TEXTS = List.of("a cat on the mat", "the kitten", "stock market 2026",
            "Dog!", "a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a", "é ü 😀", "");

    @BeforeAll
    static void models() {
        embedder = Models.file("tiny-st");
        crossEncoder = Models.file("tiny-cross");
        Models.PY.setGlobal("embedder_dir", embedder.toString());
        Models.PY.setGlobal("cross_dir", crossEncoder.toString());
        try (PyObject helpers = Models.PY.withGil(() -> PythonModules.module(Models.PY, "dlpack4j_text"))) {
            Models.PY.exec("""
                    import os
                    import torch
                    import dlpack4j_text
                    dlpack4j_text._torchvision_usable()
                    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
                    from transformers import BertConfig, BertForSequenceClassification, BertModel, PreTrainedTokenizerFast
                    from sentence_transformers import SentenceTransformer, CrossEncoder
                    from sentence_transformers import models as st_models

                    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("abcdefghijklmnopqrstuvwxyz0123456789")
                    words += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"] + ["cat", "kitten", "the", "mat", "stock"]
                    tok = Tokenizer(models.WordPiece(vocab={w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
                    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
                    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
                    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]",
                        pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
                    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                        cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]", model_max_length=16)
                    config = BertConfig(vocab_size=len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, num_labels=1)
                    torch.manual_seed(0)
                    bert = embedder_dir + "-bert"
                    BertModel(config).eval().save_pretrained(bert)
                    fast.save_pretrained(bert)
                    transformer = st_models.Transformer(bert, max_seq_length=16)
                    pooling = st_models.Pooling(transformer.get_word_embedding_dimension(), "mean")
                    SentenceTransformer(modules=[transformer, pooling, st_models.Normalize()], device="cpu").save(embedder_dir)
                    torch.manual_seed(1)
                    BertForSequenceClassification(config).eval().save_pretrained(cross_dir)
                    fast.save_pretrained(cross_dir)
                    direct_embedder = SentenceTransformer(embedder_dir, device="cpu")
                    direct_cross = CrossEncoder(cross_dir, device="cpu")
                    """);
        }
    }

    /** {@return sentence-transformers' own {@code encode} of {@code texts}, run directly} */
    private static float[][] encode(List<String> texts, boolean normalize) {
        Models.PY.setGlobal("texts", texts);
        try (PyObject v = Models.PY.eval("direct_embedder.encode(texts, normalize_embeddings=" + (normalize ? "True" : "False")
                + ").tolist()")) {
            return rows((List<?>) v.toJava());
        }
    }

    private static float[][] rows(List<?> rows) {
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

    private static float[][] embeddings(ModelResult r) {
        long[] shape = r.tensor(SentenceTransformers.EMBEDDING).shape();
        float[] flat = r.tensor(SentenceTransformers.EMBEDDING).toFloatArray();
        float[][] out = new float[(int) shape[0]][(int) shape[1]];
        for (int i = 0; i < out.length; i++) {
            System.arraycopy(flat, i * out[i].length, out[i], 0, out[i].length);
        }
        return out;
    }

    private static void assertClose(float[][] actual, float[][] expected) {
        assertThat(actual.length).isEqualTo(expected.length);
        for (int i = 0; i < actual.length; i++) {
            assertThat(actual[i].length).isEqualTo(expected[i].length);
            for (int j = 0; j < actual[i].length; j++) {
                assertThat(actual[i][j]).as("row %d, element %d", i, j).isCloseTo(expected[i][j], within(1e-5f));
            }
        }
    }

    @Test
    void embeddingsEqualSentenceTransformersEncodeOnTheSameTexts() {
        try (PythonModel model = SentenceTransformers.embeddings(embedder).python(Models.PY).chunk(3).build();
             ModelResult r = model.run(Map.of(SentenceTransformers.TEXT, TEXTS))) {
            assertThat(model.name()).isEqualTo("tiny-st");
            assertThat(model.textInputs()).containsExactly("text");
            assertThat(model.outputs()).containsExactly(new TensorSpec("embedding", DataType.FLOAT32, new long[] {-1, 32}));
            assertThat(model.valueOutputs()).containsExactly("tokens");
            assertClose(embeddings(r), encode(TEXTS, false));
        }
    }

    @Test
    void tokenCountsAreTheTokenizersAfterTruncationAtMaxSeqLength() {
        try (PythonModel model = SentenceTransformers.embeddings(embedder).python(Models.PY).build();
             ModelResult r = model.run(Map.of(SentenceTransformers.TEXT, TEXTS))) {
            Models.PY.setGlobal("texts", TEXTS);
            try (PyObject expected = Models.PY.eval(
                    "[len(direct_embedder.tokenizer(t, truncation=True, max_length=16)['input_ids']) for t in texts]")) {
                assertThat(r.values(SentenceTransformers.TOKENS)).isEqualTo(expected.toJava());
            }
            assertThat(r.values(SentenceTransformers.TOKENS).get(4)).as("a text beyond max_seq_length").isEqualTo(16L);
        }
    }

    @Test
    void normalizeNormalizesAsEncodeDoes() {
        try (PythonModel model = SentenceTransformers.embeddings(embedder).python(Models.PY).normalize(true).build();
             ModelResult r = model.run(Map.of(SentenceTransformers.TEXT, TEXTS))) {
            assertClose(embeddings(r), encode(TEXTS, true));
        }
    }

    @Test
    void sixtyFourVirtualThreadsEachGetTheirOwnEmbeddingBatchedTogether() throws Exception {
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            texts.add("cat " + i + " " + "kitten ".repeat(i % 5));
        }
        float[][] expected = encode(texts, false);
        try (PythonModel model = SentenceTransformers.embeddings(embedder).python(Models.PY)
                .batching(64, Duration.ofMillis(20)).build();
             var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<float[][]>> own = new ArrayList<>();
            for (String t : texts) {
                own.add(threads.submit(() -> {
                    try (ModelResult r = model.run(Map.of(SentenceTransformers.TEXT, t))) {
                        return embeddings(r);
                    }
                }));
            }
            for (int i = 0; i < texts.size(); i++) {
                assertClose(own.get(i).get(30, TimeUnit.SECONDS), new float[][] {expected[i]});
            }
            assertThat(model.stats().largestBatchRows()).as("callers' texts in one model call").isGreaterThan(1);
        }
    }

    @Test
    void aCrossEncodersScoresEqualItsOwnPredict() {
        List<String> queries = List.of("a cat", "a cat", "stock", "😀");
        List<String> passages = List.of("the kitten on the mat", "stock market", "the stock market fell", "");
        Models.PY.setGlobal("queries", queries);
        Models.PY.setGlobal("passages", passages);
        try (PythonModel model = SentenceTransformers.crossEncoder(crossEncoder).python(Models.PY)
                .batching(16, Duration.ZERO).build();
             ModelResult r = model.run(Map.of(SentenceTransformers.QUERY, queries, SentenceTransformers.PASSAGE, passages));
             PyObject expected = Models.PY.eval("direct_cross.predict(list(zip(queries, passages))).tolist()")) {
            assertThat(model.textInputs()).containsExactly("query", "passage");
            float[] scores = r.tensor(SentenceTransformers.SCORE).toFloatArray();
            List<?> direct = (List<?>) expected.toJava();
            assertThat(scores).hasSize(4);
            for (int i = 0; i < scores.length; i++) {
                assertThat(scores[i]).isCloseTo(((Number) direct.get(i)).floatValue(), within(1e-5f));
            }
        }
    }

    @Test
    void aDirectoryThatIsNoModelFailsClearlyAndKeepsNothingLoaded() {
        assertThatThrownBy(() -> SentenceTransformers.embeddings(Models.file("missing")).python(Models.PY).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is not a directory");
        Path empty = Models.file("empty-dir");
        empty.toFile().mkdirs();
        assertThatThrownBy(() -> SentenceTransformers.embeddings(empty).python(Models.PY).build())
                .isInstanceOf(PythonException.class);
        assertThat(Models.pyLong("len(dlpack4j_text._loaded)")).as("models loaded and kept by no factory").isZero();
    }
}
