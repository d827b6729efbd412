package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PythonException;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Text inputs, text and value outputs: strings in, strings and JSON-like values out, batched across callers. */
class TextModelTest {
    @BeforeAll
    static void models() {
        Models.pythonModule("text_models", """
                import time
                import numpy as np

                calls = []  # the rows of each model call

                def echo():
                    def run(texts):
                        calls.append(len(texts))
                        return list(texts)
                    return run

                def describe():
                    # per row: the text's length in code points, its UTF-8 bytes, a dict of all value kinds
                    def run(texts):
                        calls.append(len(texts))
                        return {
                            "upper": [t.upper() for t in texts],
                            "facts": [{"chars": len(t), "utf8": len(t.encode("utf-8")), "ratio": len(t) / 2,
                                       "empty": t == "", "none": None, "list": [1, "two", 3.5, True, None],
                                       "tuple": (1, 2), "nested": {"z": 1, "a": {"b": [t[:1]]}}} for t in texts],
                        }
                    return run

                def mixed():
                    # a text and a tensor input: each row's text repeated, and the tensor's row summed
                    def run(texts, x):
                        calls.append(len(texts))
                        x = np.from_dlpack(x)
                        assert x.shape[0] == len(texts), (x.shape, len(texts))
                        return [t * 2 for t in texts], x.sum(axis=1, keepdims=True).astype(np.float32)
                    return run

                def returns(what):
                    # a value output: the Python object of the expression what for a row "bad", else 0
                    def run(texts):
                        return [eval(what) if t == "bad" else 0 for t in texts]
                    return run

                def wrong_length():
                    # one item too many for a call with a row "bad"
                    return lambda texts: list(texts) + (["one too many"] if "bad" in texts else [])

                def not_a_list():
                    return lambda texts: "just one str" if "bad" in texts else list(texts)

                def poisoned(seconds):
                    def run(texts):
                        calls.append(len(texts))
                        time.sleep(seconds)
                        if any("poison" in t for t in texts):
                            raise ValueError("a poisoned text")
                        return [t[::-1] for t in texts]
                    return run

                def reset():
                    calls.clear()
                """);
    }

    private static PythonModel echo(PythonModel.Builder b) {
        return b.python(Models.PY).factory("text_models", "echo").textInput("text").textOutput("text").build();
    }

    private static List<String> echoed(PythonModel model, List<String> texts) {
        try (ModelResult r = model.run(Map.of("text", texts))) {
            return r.texts("text");
        }
    }

    @Test
    void stringsCrossAsUtf8AndComeBackEqual() {
        String big = "é😀".repeat(350_000); // about 1 MB of UTF-8, non-BMP characters included
        List<String> texts = List.of("plain", "", "𝄞 non-BMP 😀", "e\u0301 combining", "a\u0000NUL inside", big, "日本語");
        try (PythonModel model = echo(PythonModel.builder().name("echo"))) {
            assertThat(echoed(model, texts)).containsExactlyElementsOf(texts);
        }
    }

    @Test
    void oneStringIsOneRowAndTextReturnsIt() {
        try (PythonModel model = echo(PythonModel.builder().name("echo-one"));
             ModelResult r = model.run(Map.of("text", "a cat"))) {
            assertThat(r.names()).containsExactly("text");
            assertThat(r.text("text")).isEqualTo("a cat");
            assertThat(r.texts("text")).containsExactly("a cat");
        }
    }

    @Test
    void everyValueTypeComesBackAsItsJavaType() {
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("describe")
                .factory("text_models", "describe").textInput("text").textOutput("upper").valueOutput("facts").build();
             ModelResult r = model.run(Map.of("text", List.of("😀x", "")))) {
            assertThat(r.names()).containsExactly("upper", "facts");
            assertThat(r.texts("upper")).containsExactly("😀X", "");
            @SuppressWarnings("unchecked") Map<String, Object> first = (Map<String, Object>) r.values("facts").getFirst();
            assertThat(first.keySet()).containsExactly("chars", "utf8", "ratio", "empty", "none", "list", "tuple", "nested");
            assertThat(first.get("chars")).isEqualTo(2L);
            assertThat(first.get("utf8")).isEqualTo(5L);
            assertThat(first.get("ratio")).isEqualTo(1.0d);
            assertThat(first.get("empty")).isEqualTo(Boolean.FALSE);
            assertThat(first.containsKey("none")).isTrue();
            assertThat(first.get("none")).isNull();
            assertThat(first.get("list")).isEqualTo(Arrays.asList(1L, "two", 3.5d, true, null));
            assertThat(first.get("tuple")).isEqualTo(List.of(1L, 2L));
            @SuppressWarnings("unchecked") Map<String, Object> nested = (Map<String, Object>) first.get("nested");
            assertThat(nested.keySet()).containsExactly("z", "a"); // Python's order, not sorted
            assertThat(nested.get("a")).isEqualTo(Map.of("b", List.of("😀")));
            assertThat(((Map<?, ?>) r.values("facts").get(1)).get("empty")).isEqualTo(Boolean.TRUE);
        }
    }

    @Test
    void aValueOfAnotherTypeFailsTheCallNamingTheOutputAndThePythonType() {
        Map<String, String> refused = new LinkedHashMap<>();
        refused.put("b'raw'", "bytes");
        refused.put("2 ** 70", "int beyond 64 bits");
        refused.put("np.float32(1.5)", "numpy.float32");
        refused.put("{1: 'int key'}", "key that is a Python int");
        refused.put("[{'deep': object()}]", "object");
        refused.put("np.zeros(2)", "numpy.ndarray");
        refused.forEach((expression, type) -> {
            try (PythonModel model = PythonModel.builder().python(Models.PY).name("returns")
                    .factory("text_models", "returns", expression).textInput("text").valueOutput("v").build()) {
                assertThatThrownBy(() -> model.run(Map.of("text", List.of("fine", "bad"))))
                        .as(expression).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("value output v: row 1").hasMessageContaining(type);
                assertThat(model.stats().failed()).isEqualTo(1);
                try (ModelResult r = model.run(Map.of("text", "fine"))) { // the model goes on
                    assertThat(r.value("v")).isEqualTo(0L);
                }
            }
        });
    }

    @Test
    void anOutputListOfAnotherLengthFailsTheCallNamingTheOutput() {
        for (boolean batching : new boolean[] {false, true}) {
            PythonModel.Builder b = PythonModel.builder().python(Models.PY).name("wrong-length")
                    .factory("text_models", "wrong_length").textInput("text").textOutput("labels");
            try (PythonModel model = (batching ? b.batching(8, Duration.ZERO) : b).build()) {
                assertThatThrownBy(() -> model.run(Map.of("text", List.of("a", "bad"))))
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("output labels has 3 rows for a call of 2 rows");
                assertThat(model.stats().failed()).isEqualTo(1);
            }
        }
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("not-a-list")
                .factory("text_models", "not_a_list").textInput("text").textOutput("labels").build()) {
            assertThatThrownBy(() -> model.run(Map.of("text", "bad"))).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("text output labels is a Python str");
        }
    }

    @Test
    void badTextInputsAreRefusedBeforePythonRuns() {
        Models.PY.exec("import text_models; text_models.reset()");
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("mixed").factory("text_models", "mixed")
                .textInput("text").input("x", DataType.FLOAT32, -1, 2).textOutput("twice")
                .output("sum", DataType.FLOAT32, -1, 1).build();
             Tensor x = Tensor.of(new float[] {1, 2}, 1, 2)) {
            Models.PY.exec("text_models.reset()");
            assertThatThrownBy(() -> model.run(Map.of("text", x, "x", x))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("input text is a tensor").hasMessageContaining("declared text");
            assertThatThrownBy(() -> model.run(Map.of("text", "a", "x", "b"))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("input x is text").hasMessageContaining("give a Tensor");
            assertThatThrownBy(() -> model.run(Map.of("text", List.of(), "x", x))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("input text is an empty list");
            assertThatThrownBy(() -> model.run(Map.of("text", Arrays.asList("a", null), "x", x)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("input text: row 1 is null");
            Map<String, Object> nullText = new LinkedHashMap<>();
            nullText.put("text", null);
            nullText.put("x", x);
            assertThatThrownBy(() -> model.run(nullText)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("input text is null");
            assertThatThrownBy(() -> model.run(Map.of("text", List.of("ok", "lone \uD800 high"), "x", x)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("input text: row 1 has a lone surrogate (U+D800) at index 5");
            assertThatThrownBy(() -> model.run(Map.of("text", "\uDC00", "x", x)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lone surrogate (U+DC00)");
            assertThatThrownBy(() -> model.run(Map.of("text", List.of(1, 2), "x", x)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("row 0 is a java.lang.Integer");
            assertThatThrownBy(() -> model.predict(Map.of("x", x))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("text or value outputs").hasMessageContaining("use run");
            assertThat(Models.pyLong("len(text_models.calls)")).as("model calls").isZero();
            assertThat(model.stats().requests()).isZero();
        }
    }

    @Test
    void textAndTensorInputsBatchTogetherAndEachCallGetsItsOwnRows() throws Exception {
        Models.PY.exec("import text_models; text_models.reset()");
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("mixed-batching")
                .factory("text_models", "mixed").textInput("text").input("x", DataType.FLOAT32, -1, 2)
                .textOutput("twice").output("sum", DataType.FLOAT32, -1, 1)
                .batching(64, Duration.ofMillis(50)).build()) {
            Models.PY.exec("text_models.reset()");
            List<CompletableFuture<ModelResult>> futures = new ArrayList<>();
            List<Tensor> xs = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                int rows = 1 + i % 3;
                List<String> texts = new ArrayList<>();
                float[] values = new float[rows * 2];
                for (int r = 0; r < rows; r++) {
                    texts.add("c" + i + "r" + r);
                    values[2 * r] = i;
                    values[2 * r + 1] = r;
                }
                Tensor x = Tensor.of(values, rows, 2);
                xs.add(x);
                futures.add(model.runAsync(Map.of("text", texts, "x", x)));
            }
            for (int i = 0; i < 8; i++) {
                try (ModelResult r = futures.get(i).get(10, TimeUnit.SECONDS)) {
                    int rows = 1 + i % 3;
                    List<String> expected = new ArrayList<>();
                    float[] sums = new float[rows];
                    for (int row = 0; row < rows; row++) {
                        expected.add(("c" + i + "r" + row).repeat(2));
                        sums[row] = i + row;
                    }
                    assertThat(r.texts("twice")).containsExactlyElementsOf(expected);
                    assertThat(r.tensor("sum").toFloatArray()).containsExactly(sums);
                }
            }
            xs.forEach(Tensor::close);
            assertThat(Models.pyLong("max(text_models.calls)")).as("the most rows of one model call").isGreaterThan(3);
            assertThat(model.stats().largestBatchRows()).isGreaterThan(3);
        }
    }

    @Test
    void rowsThatDifferBetweenInputsAreRefusedWithBatching() {
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("mixed-rows")
                .factory("text_models", "mixed").textInput("text").input("x", DataType.FLOAT32, -1, 2)
                .textOutput("twice").output("sum", DataType.FLOAT32, -1, 1).batching(8, Duration.ZERO).build();
             Tensor x = Tensor.of(new float[] {1, 2}, 1, 2)) {
            assertThatThrownBy(() -> model.run(Map.of("text", List.of("a", "b"), "x", x)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("has 1 rows, the inputs before it 2");
        }
    }

    @Test
    void fiveThousandVirtualThreadsEachGetTheirOwnText() throws Exception {
        Dlpack.liveExports();
        try (PythonModel model = echo(PythonModel.builder().name("echo-5000").batching(64, Duration.ofMillis(1))
                .maxQueue(10_000));
             var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Boolean>> own = new ArrayList<>();
            for (int i = 0; i < 5_000; i++) {
                int caller = i;
                own.add(threads.submit(() -> {
                    List<String> mine = List.of("caller " + caller + " 😀", "row two of " + caller);
                    return echoed(model, mine).equals(mine);
                }));
            }
            for (Future<Boolean> f : own) {
                assertThat(f.get(60, TimeUnit.SECONDS)).isTrue();
            }
            assertThat(model.stats().answered()).isEqualTo(5_000);
            assertThat(model.stats().largestBatchRows()).as("callers' rows batched together").isGreaterThan(2);
        }
    }

    @Test
    void aPoisonedTextInABatchOf32FailsAlone() throws Exception {
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("poisoned")
                .factory("text_models", "poisoned", 0.0).textInput("text").textOutput("reversed")
                .batching(32, Duration.ofMillis(100)).build()) {
            Models.PY.exec("text_models.reset()");
            List<CompletableFuture<ModelResult>> futures = new ArrayList<>();
            for (int i = 0; i < 32; i++) {
                futures.add(model.runAsync(Map.of("text", i == 13 ? "poison " + i : "text " + i)));
            }
            for (int i = 0; i < 32; i++) {
                if (i == 13) {
                    int call = i;
                    assertThatThrownBy(() -> futures.get(call).join()).isInstanceOf(CompletionException.class)
                            .cause().isInstanceOf(PythonException.class).hasMessageContaining("a poisoned text");
                } else {
                    try (ModelResult r = futures.get(i).get(10, TimeUnit.SECONDS)) {
                        assertThat(r.text("reversed")).isEqualTo(new StringBuilder("text " + i).reverse().toString());
                    }
                }
            }
            assertThat(model.stats().failed()).isEqualTo(1);
            assertThat(model.stats().answered()).isEqualTo(31);
            assertThat(Models.pyLong("text_models.calls[0]")).as("the first model call had all 32").isEqualTo(32);
        }
    }

    @Test
    void aTextCallPastItsDeadlineFailsWithATimeout() {
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("slow-text")
                .factory("text_models", "poisoned", 0.3).textInput("text").textOutput("reversed")
                .batching(4, Duration.ZERO).timeout(Duration.ofMillis(100)).build()) {
            assertThatThrownBy(() -> model.run(Map.of("text", "late"))).isInstanceOf(ModelTimeoutException.class);
            assertThat(model.stats().timedOut()).isEqualTo(1);
        }
    }

    @Test
    void closeUnderLoadAnswersOrRefusesEveryTextCall() throws Exception {
        PythonModel model = PythonModel.builder().python(Models.PY).name("close-text")
                .factory("text_models", "poisoned", 0.002).textInput("text").textOutput("reversed")
                .batching(8, Duration.ZERO).build();
        try (var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<String>> outcomes = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                int caller = i;
                outcomes.add(threads.submit(() -> {
                    try (ModelResult r = model.run(Map.of("text", "t" + caller))) {
                        return r.text("reversed").equals(new StringBuilder("t" + caller).reverse().toString()) ? "ok" : "wrong";
                    } catch (IllegalStateException e) {
                        return "closed";
                    }
                }));
            }
            Thread.sleep(20);
            model.close();
            for (Future<String> f : outcomes) {
                assertThat(f.get(30, TimeUnit.SECONDS)).isIn("ok", "closed");
            }
        }
        assertThatThrownBy(() -> model.run(Map.of("text", "after"))).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void textCallsLeakNeitherExportsNorNativeBytesNorPythonMemory() throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        Models.PY.exec("import tracemalloc, gc; gc.collect(); tracemalloc.start(); before = tracemalloc.get_traced_memory()[0]");
        String text = "x".repeat(10_000);
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("leak-text")
                .factory("text_models", "mixed").textInput("text").input("x", DataType.FLOAT32, -1, 2)
                .textOutput("twice").output("sum", DataType.FLOAT32, -1, 1).batching(16, Duration.ZERO)
                .maxQueue(10_000).build();
             var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> calls = new ArrayList<>();
            for (int i = 0; i < 2_000; i++) {
                calls.add(threads.submit(() -> {
                    try (Tensor x = Tensor.of(new float[] {1, 2}, 1, 2);
                         ModelResult r = model.run(Map.of("text", text, "x", x))) {
                        return r.text("twice").length();
                    }
                }));
            }
            for (Future<?> f : calls) {
                assertThat(f.get(60, TimeUnit.SECONDS)).isEqualTo(20_000);
            }
        }
        Models.PY.exec("import text_models; text_models.reset(); gc.collect(); grown = tracemalloc.get_traced_memory()[0] - before; tracemalloc.stop()");
        // 2,000 calls of 10 kB in and 20 kB out: a leaked list of either would be 20 MB or more
        assertThat(Models.pyLong("grown")).as("Python's traced memory grown, bytes").isLessThan(2_000_000);
        Models.assertReleasedSince(exports, bytes);
    }

    @Test
    void aResultRefusesTheWrongKindOfOutputAndClosesItsTensors() {
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("mixed-result")
                .factory("text_models", "mixed").textInput("text").input("x", DataType.FLOAT32, -1, 2)
                .textOutput("twice").output("sum", DataType.FLOAT32, -1, 1).build();
             Tensor x = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2)) {
            assertThat(model.textInputs()).containsExactly("text");
            assertThat(model.inputs()).extracting(TensorSpec::name).containsExactly("x");
            assertThat(model.textOutputs()).containsExactly("twice");
            assertThat(model.valueOutputs()).isEmpty();
            ModelResult r = model.run(Map.of("text", List.of("a", "b"), "x", x));
            assertThatThrownBy(() -> r.tensor("twice")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("output twice is a text output, not a tensor output");
            assertThatThrownBy(() -> r.texts("sum")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("output sum is a tensor");
            assertThatThrownBy(() -> r.values("twice")).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> r.text("twice")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("has 2 rows");
            assertThatThrownBy(() -> r.texts("missing")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("no output missing");
            Tensor sum = r.tensor("sum");
            Tensor kept = sum.share();
            r.close();
            assertThat(sum.isClosed()).isTrue();
            assertThat(kept.toFloatArray()).containsExactly(3f, 7f);
            kept.close();
            assertThatThrownBy(() -> r.tensor("sum")).isInstanceOf(IllegalStateException.class);
            assertThat(r.texts("twice")).containsExactly("aa", "bb"); // plain Java values, readable after close
        }
    }

    /** {@return a map of two entries in this order: without declared inputs a map's order is the model's} */
    private static Map<String, Object> inOrder(String k1, Object v1, String k2, Object v2) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put(k1, v1);
        m.put(k2, v2);
        return m;
    }

    @Test
    void withoutDeclaredInputsAStringIsATextInputAndATensorATensorInput() throws ExecutionException, InterruptedException {
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("undeclared").factory("text_models", "mixed")
                .textOutput("twice").output("sum", DataType.FLOAT32, -1, 1).build();
             Tensor x = Tensor.of(new float[] {1, 2}, 1, 2);
             ModelResult r = model.runAsync(inOrder("text", "ab", "x", x)).get()) {
            assertThat(r.text("twice")).isEqualTo("abab");
            assertThat(r.tensor("sum").toFloatArray()).containsExactly(3f);
        }
    }
}
