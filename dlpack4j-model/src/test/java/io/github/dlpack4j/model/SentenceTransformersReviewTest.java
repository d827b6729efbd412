package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review experiments on {@link SentenceTransformers}: its registry of loaded models keeps none once
 * a build failed, wherever it failed; builds from several threads at once, the very first ones
 * included, each get their own model. Two tiny BERT embedders of different dimensions (32, 16) make
 * a mix-up show as a wrong dimension.
 */
class SentenceTransformersReviewTest {
    private static Path wide;
    private static Path narrow;
    private static final List<String> TEXTS = List.of("a cat on the mat", "the kitten", "é ü 😀");

    @BeforeAll
    static void models() {
        wide = Models.file("review-st-32");
        narrow = Models.file("review-st-16");
        Models.PY.setGlobal("review_dirs", List.of(wide.toString(), narrow.toString()));
        try (PyObject helpers = Models.PY.withGil(() -> PythonModules.module(Models.PY, "dlpack4j_text"))) {
            Models.PY.exec("""
                    import builtins, gc, sys, time
                    import torch
                    sys.modules["dlpack4j_text"]._torchvision_usable()
                    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
                    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast
                    from sentence_transformers import SentenceTransformer
                    from sentence_transformers import models as st_models

                    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("abcdefghijklmnopqrstuvwxyz0123456789")
                    words += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"] + ["cat", "kitten", "the", "mat"]
                    tok = Tokenizer(models.WordPiece(vocab={w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
                    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
                    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
                    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]",
                        special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
                    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                        cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]", model_max_length=16)
                    review_direct = {}
                    for d, hidden in zip(review_dirs, (32, 16)):
                        config = BertConfig(vocab_size=len(words), hidden_size=hidden, num_hidden_layers=1,
                            num_attention_heads=4, intermediate_size=32, max_position_embeddings=64)
                        torch.manual_seed(hidden)
                        BertModel(config).eval().save_pretrained(d + "-bert")
                        fast.save_pretrained(d + "-bert")
                        transformer = st_models.Transformer(d + "-bert", max_seq_length=16)
                        pooling = st_models.Pooling(transformer.get_word_embedding_dimension(), "mean")
                        SentenceTransformer(modules=[transformer, pooling], device="cpu").save(d)
                        review_direct[d] = SentenceTransformer(d, device="cpu")

                    def review_loaded():
                        helpers = sys.modules.get("dlpack4j_text")
                        return len(helpers._loaded) if helpers is not None else 0

                    def review_instances():
                        gc.collect()
                        return sum(1 for o in gc.get_objects() if isinstance(o, SentenceTransformer))

                    # An audit hook that, while asked to, slows the helper module's run (a GIL switch there):
                    # hooks cannot be removed, so it is added once per interpreter and checks a flag.
                    if not getattr(builtins, "_review_hook_added", False):
                        def _review_hook(event, args):
                            if event == "exec" and getattr(builtins, "_review_slow_exec", False) \\
                                    and getattr(args[0], "co_filename", "") == "dlpack4j_text.py":
                                time.sleep(0.3)
                        sys.addaudithook(_review_hook)
                        builtins._review_hook_added = True
                    """);
        }
    }

    private final List<String> restore = new ArrayList<>();

    @AfterEach
    void undoPatches() {
        for (String code : restore) {
            Models.PY.exec(code);
        }
        Models.PY.exec("import builtins\nbuiltins._review_slow_exec = False");
    }

    /** Replaces {@code target} (a Python expression that can be assigned) by {@code value} for this test. */
    private void patch(String target, String value) {
        Models.PY.exec("_review_saved_" + restore.size() + " = " + target + "\n" + target + " = " + value);
        restore.add(target + " = _review_saved_" + restore.size());
    }

    private static long loaded() {
        return Models.pyLong("review_loaded()");
    }

    private static long instances() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc(); // a PythonException's traceback may hold the model until it is collected
            Thread.sleep(20);
        }
        return Models.pyLong("review_instances()");
    }

    /** Asserts that {@code model} embeds as sentence-transformers' own {@code encode} of its directory does. */
    private static void embedsAsItsOwnDirectory(PythonModel model, Path dir, int dim) {
        Models.PY.setGlobal("texts", TEXTS);
        try (ModelResult r = model.run(Map.of(SentenceTransformers.TEXT, TEXTS));
             PyObject expected = Models.PY.eval("review_direct[" + Models.pyString(dir.toString())
                     + "].encode(texts).flatten().tolist()")) {
            assertThat(r.tensor(SentenceTransformers.EMBEDDING).shape()).containsExactly(TEXTS.size(), dim);
            float[] actual = r.tensor(SentenceTransformers.EMBEDDING).toFloatArray();
            List<?> direct = (List<?>) expected.toJava();
            for (int i = 0; i < actual.length; i++) {
                assertThat(actual[i]).isCloseTo(((Number) direct.get(i)).floatValue(), within(1e-5f));
            }
        }
    }

    @Test
    @Timeout(120)
    void aModelThatDoesNotSayItsDimensionFailsTheBuildAndIsNotKeptLoaded() throws Exception {
        long before = instances();
        long kept = loaded();
        patch("SentenceTransformer.get_sentence_embedding_dimension", "lambda self: None");
        if (Models.pyLong("int(hasattr(SentenceTransformer, 'get_embedding_dimension'))") == 1) {
            patch("SentenceTransformer.get_embedding_dimension", "lambda self: None");
        }
        assertThatThrownBy(() -> SentenceTransformers.embeddings(wide).python(Models.PY).build())
                .isInstanceOf(PythonException.class).hasMessageContaining("does not say its embedding's dimension");
        assertThat(loaded()).as("models loaded and kept by no factory").isEqualTo(kept);
        assertThat(instances()).as("SentenceTransformer objects alive").isEqualTo(before);
    }

    @Test
    @Timeout(120)
    void aDirectoryThatIsNoModelAFactoryThatRaisesARuntimeThatFailsFirstOrAWarmUpThatFailsKeepsNothingLoaded() throws Exception {
        long before = instances();
        long kept = loaded();
        Path garbage = Models.file("review-garbage");
        Files.createDirectories(garbage);
        Files.writeString(garbage.resolve("modules.json"), "{ not json");
        assertThatThrownBy(() -> SentenceTransformers.embeddings(garbage).python(Models.PY).build())
                .isInstanceOf(PythonException.class);
        assertThat(loaded()).isEqualTo(kept);

        // the factory (embedder) raises once it took the loaded model
        patch("sys.modules['dlpack4j_text']._dimension", "(lambda real: lambda model, path: "
                + "(_ for _ in ()).throw(RuntimeError('factory fails')) if path == 'the model' else real(model, path))"
                + "(sys.modules['dlpack4j_text']._dimension)");
        assertThatThrownBy(() -> SentenceTransformers.embeddings(wide).python(Models.PY).build())
                .isInstanceOf(PythonException.class).hasMessageContaining("factory fails");
        assertThat(loaded()).isEqualTo(kept);
        undoPatches();
        restore.clear();

        // the runtime fails before its factory took the loaded model
        patch("sys.modules['dlpack4j_model'].load_factory", "lambda module, function, args: "
                + "(_ for _ in ()).throw(RuntimeError('before the factory'))");
        assertThatThrownBy(() -> SentenceTransformers.embeddings(wide).python(Models.PY).build())
                .isInstanceOf(PythonException.class).hasMessageContaining("before the factory");
        assertThat(loaded()).isEqualTo(kept);
        undoPatches();
        restore.clear();

        // the warm-up raises inside the model
        patch("SentenceTransformer.preprocess", "lambda self, *a, **k: (_ for _ in ()).throw(RuntimeError('warm-up fails'))");
        assertThatThrownBy(() -> SentenceTransformers.embeddings(wide).python(Models.PY).build())
                .isInstanceOf(PythonException.class).hasMessageContaining("warm-up fails");
        assertThat(loaded()).isEqualTo(kept);
        undoPatches();
        restore.clear();
        assertThat(instances()).as("SentenceTransformer objects alive").isEqualTo(before);
    }

    @Test
    @Timeout(180)
    void theVeryFirstBuildsFromTwoThreadsAtOnceEachGetTheirOwnModel() throws Exception {
        // as if this JVM had not made the helper module yet, and the GIL switched while it ran
        Models.PY.exec("import builtins, sys\nsys.modules.pop('dlpack4j_text', None)\nbuiltins._review_slow_exec = True");
        buildAtOnce();
    }

    @Test
    @Timeout(180)
    void buildsFromFourThreadsAtOnceEachGetTheirOwnModel() throws Exception {
        buildAtOnce();
    }

    private void buildAtOnce() throws Exception {
        long kept = loaded();
        int threads = 4;
        CountDownLatch start = new CountDownLatch(1);
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        PythonModel[] built = new PythonModel[threads];
        List<Thread> builders = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            int k = i;
            builders.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                    built[k] = SentenceTransformers.embeddings(k % 2 == 0 ? wide : narrow).python(Models.PY)
                            .name("review-" + k).build();
                } catch (Throwable t) {
                    failures.add(t);
                }
            }));
        }
        start.countDown();
        for (Thread t : builders) {
            assertThat(t.join(java.time.Duration.ofSeconds(120))).isTrue();
        }
        Models.PY.exec("import builtins\nbuiltins._review_slow_exec = False");
        try {
            assertThat(failures).as("builds that failed").isEmpty();
            for (int i = 0; i < threads; i++) {
                embedsAsItsOwnDirectory(built[i], i % 2 == 0 ? wide : narrow, i % 2 == 0 ? 32 : 16);
            }
            assertThat(loaded()).as("models loaded and kept by no factory").isEqualTo(kept);
        } finally {
            for (PythonModel m : built) {
                if (m != null) {
                    m.close();
                }
            }
        }
    }

    @Test
    @Timeout(120)
    void aBuilderBuildsAgain() {
        long kept = loaded();
        SentenceTransformers.Builder b = SentenceTransformers.embeddings(narrow).python(Models.PY);
        try (PythonModel first = b.build(); PythonModel second = b.build()) {
            embedsAsItsOwnDirectory(first, narrow, 16);
            embedsAsItsOwnDirectory(second, narrow, 16);
        }
        assertThat(loaded()).isEqualTo(kept);
    }
}
