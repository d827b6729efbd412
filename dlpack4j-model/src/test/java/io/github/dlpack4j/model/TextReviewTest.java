package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonException;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review experiments on text inputs and text/value outputs: every way a {@link ModelResult} ends
 * (answered, late, cancelled, completed from outside, rerun alone, a conversion that fails halfway)
 * letting go of its tensors and of the model's Python objects; text and tensor rows stacked and
 * split; re-entrant text calls; strings at the edges of UTF-16; values too deep, with odd keys, huge.
 */
class TextReviewTest {
    @BeforeAll
    static void module() {
        Models.pythonModule("text_review", """
                import gc
                import threading
                import time
                import weakref
                import numpy as np

                class Obj:
                    pass

                refs = []      # weak references to what the models returned (arrays, objects in values)
                calls = []     # per model call: (model, rows) or (model, kinds, rows)
                lock = threading.Lock()
                fns = {}       # by model: the Java callback of back()

                def kept(o):
                    refs.append(weakref.ref(o))
                    return o

                def alive():
                    gc.collect()
                    n = sum(1 for r in refs if r() is not None)
                    refs[:] = [r for r in refs if r() is not None]
                    return n

                def calls_of(name):
                    return [c for c in calls if c[0] == name]

                def deep(n, bottom=0):
                    v = bottom
                    for _ in range(n):
                        v = [v]
                    return v

                def mixed(name, seconds):
                    # a text and a tensor input [rows, 2]: "name:text" per row, and x * 2 (a new array)
                    def run(texts, x):
                        a = np.from_dlpack(x)
                        assert a.shape[0] == len(texts), (a.shape, len(texts))
                        with lock:
                            calls.append((name, len(texts)))
                        if seconds:
                            time.sleep(seconds)
                        if any(t.startswith("poison") for t in texts):
                            raise ValueError("a poisoned text")
                        return [name + ":" + t for t in texts], kept(a * 2)
                    return run

                def aliasing(name):
                    # the tensor input itself comes back: with batching, a view of the batch's buffer
                    def run(texts, x):
                        with lock:
                            calls.append((name, len(texts)))
                        return [t[::-1] for t in texts], np.from_dlpack(x)
                    return run

                def kinds(name, seconds):
                    # undeclared inputs: per row, what the arguments are, in the order the model gets them
                    def run(*args):
                        def kind(a):
                            return "text" if isinstance(a, list) else "tensor%d" % np.from_dlpack(a).shape[1]
                        rows = len(args[0]) if isinstance(args[0], list) else np.from_dlpack(args[0]).shape[0]
                        tags = ",".join(kind(a) for a in args)
                        with lock:
                            calls.append((name, tags, rows))
                        time.sleep(seconds)
                        return [tags] * rows
                    return run

                def doubles(seconds):
                    def run(x):
                        time.sleep(seconds)
                        return kept(np.from_dlpack(x) * 2)
                    return run

                def returns(what):
                    # a value output: eval(what) for a row "bad", else 0
                    def run(texts):
                        return [eval(what) if t == "bad" else 0 for t in texts]
                    return run

                def tensor_then_value(what):
                    # a tensor output (a new array), then a value output: eval(what) for a row "bad"
                    def run(texts):
                        return kept(np.ones((len(texts), 2), dtype=np.float32)), [eval(what) if t == "bad" else 0 for t in texts]
                    return run

                def texts_returning(what):
                    # a text output: eval(what) for a row "bad", else the row
                    def run(texts):
                        return [eval(what) if t == "bad" else t for t in texts]
                    return run

                def echo():
                    return lambda texts: list(texts)

                def back(name):
                    # "k rest": k > 0 calls Java, which runs the model again on "k-1 rest"; "0 rest" -> "rest"
                    def run(texts):
                        out = []
                        for t in texts:
                            k, rest = t.split(" ", 1)
                            out.append(rest if not k.isdigit() or k == "0" else fns[name](str(int(k) - 1) + " " + rest) + "<" + k)
                        return out, [len(o) for o in out]
                    return run

                def reset():
                    calls.clear()
                """);
    }

    @BeforeEach
    void reset() {
        Models.PY.exec("import text_review\ntext_review.reset()");
    }

    // ------------------------------------------------------------------ helpers

    /** What the model's Python still holds of its outputs, after Python's collector ran, looked at for up to 5 s. */
    private static long aliveOutputs() throws InterruptedException {
        long n = 0;
        for (int i = 0; i < 500; i++) {
            n = Models.pyLong("__import__('text_review').alive()");
            if (n == 0) {
                return 0;
            }
            Thread.sleep(10);
        }
        return n;
    }

    /**
     * Nothing left: no array a model returned alive in Python, no export, no native bytes. Java's
     * collector runs first only where {@code afterJavaGc}: a {@link PythonException} keeps its
     * traceback (whose frames hold the inputs) until collected.
     */
    private static void nothingLeft(int exports, long bytes, boolean afterJavaGc) throws InterruptedException {
        if (afterJavaGc) {
            for (int i = 0; i < 3; i++) {
                System.gc();
                Thread.sleep(20);
            }
        }
        assertThat(aliveOutputs()).as("the model's outputs still alive in Python").isZero();
        Models.assertReleasedSince(exports, bytes);
    }

    private static long calls(String name) {
        return Models.pyLong("len(__import__('text_review').calls_of('" + name + "'))");
    }

    private static void assertAddsUp(ModelStats s, long cancelledOrCompletedFromOutside) {
        assertThat(s.requests()).as("requests == answered + failed + timedOut + dropped: " + s)
                .isEqualTo(s.answered() + s.failed() + s.timedOut() + cancelledOrCompletedFromOutside);
    }

    private static PythonModel.Builder mixed(String name, double seconds) {
        return PythonModel.builder().python(Models.PY).name(name).factory("text_review", "mixed", name, seconds)
                .textInput("text").input("x", io.github.dlpack4j.DataType.FLOAT32, -1, 2)
                .textOutput("tagged").output("twice", io.github.dlpack4j.DataType.FLOAT32, -1, 2);
    }

    /** Rows {@code rows} of call {@code call}: texts {@code "cCALLrROW"}, x's row r {@code [call * 10 + r, -r]}. */
    private static List<String> texts(int call, int rows) {
        List<String> t = new ArrayList<>();
        for (int r = 0; r < rows; r++) {
            t.add("c" + call + "r" + r + "😀");
        }
        return t;
    }

    private static float[] xs(int call, int rows) {
        float[] v = new float[rows * 2];
        for (int r = 0; r < rows; r++) {
            v[2 * r] = call * 10 + r;
            v[2 * r + 1] = -r;
        }
        return v;
    }

    private static void assertMixedAnswer(String name, ModelResult r, int call, int rows) {
        List<String> tagged = texts(call, rows).stream().map(t -> name + ":" + t).toList();
        assertThat(r.texts("tagged")).as("call %d", call).containsExactlyElementsOf(tagged);
        assertThat(r.tensor("twice").shape()).containsExactly(rows, 2);
        assertThat(r.tensor("twice").toFloatArray()).as("call %d", call).containsExactly(Models.doubled(xs(call, rows)));
    }

    // ------------------------------------------------------------------ every way a result ends

    @Test
    @Timeout(60)
    void answeredResultsOwnTheirTensorsAndLetGoOfThemWhenClosedWithAndWithoutBatching() throws Exception {
        for (boolean batching : new boolean[] {false, true}) {
            int exports = Dlpack.liveExports();
            long bytes = Dlpack.nativeBytesInUse();
            String name = "answered-" + batching;
            PythonModel.Builder b = mixed(name, 0);
            try (PythonModel model = (batching ? b.batching(16, Duration.ofMillis(20)) : b).build()) {
                List<Tensor> inputs = new ArrayList<>();
                List<CompletableFuture<ModelResult>> futures = new ArrayList<>();
                for (int i = 0; i < 12; i++) {
                    Tensor x = Tensor.of(xs(i, 1 + i % 4), 1 + i % 4, 2);
                    inputs.add(x);
                    futures.add(model.runAsync(Map.of("text", texts(i, 1 + i % 4), "x", x)));
                }
                List<ModelResult> results = new ArrayList<>();
                for (CompletableFuture<ModelResult> f : futures) {
                    results.add(f.get(10, TimeUnit.SECONDS));
                }
                inputs.forEach(Tensor::close); // the results are the model's memory, not the inputs'
                for (int i = 0; i < 12; i++) {
                    try (ModelResult r = results.get(i)) {
                        assertMixedAnswer(name, r, i, 1 + i % 4);
                    }
                    assertThatThrownBy(() -> results.getFirst().tensor("twice")).isInstanceOf(IllegalStateException.class);
                }
                assertAddsUp(model.stats(), 0);
                assertThat(model.stats().answered()).isEqualTo(12);
            }
            nothingLeft(exports, bytes, false);
        }
    }

    @Test
    @Timeout(60)
    void aResultThatComesLateOnTheCallersOwnThreadOrOnAWorkerIsLetGo() throws Exception {
        for (boolean batching : new boolean[] {false, true}) {
            int exports = Dlpack.liveExports();
            long bytes = Dlpack.nativeBytesInUse();
            String name = "late-" + batching;
            PythonModel.Builder b = mixed(name, 0.06).timeout(Duration.ofMillis(15));
            try (PythonModel model = (batching ? b.batching(4, Duration.ZERO) : b).build();
                 Tensor x = Tensor.of(xs(1, 2), 2, 2)) {
                for (int i = 0; i < 5; i++) {
                    assertThatThrownBy(() -> model.run(Map.of("text", texts(1, 2), "x", x)))
                            .isInstanceOf(ModelTimeoutException.class)
                            .hasMessageContaining(batching ? "the deadline of 15.0 ms passed" : "caller's thread");
                }
                long until = System.nanoTime() + 5_000_000_000L;
                while (model.queued() > 0 && System.nanoTime() < until) {
                    Thread.sleep(10);
                }
                Thread.sleep(150); // the last call's answer arrives, and is let go
                assertThat(calls(name)).as("calls that ran").isPositive();
                assertThat(x.toFloatArray()).as("the caller's input untouched").containsExactly(xs(1, 2));
                assertThat(model.stats().timedOut()).isEqualTo(5);
                assertAddsUp(model.stats(), 0);
            }
            nothingLeft(exports, bytes, false);
        }
    }

    /** What a caller does to its future while the model call runs, and what the future then says. */
    private record FromOutside(String name, Consumer<CompletableFuture<ModelResult>> act,
                               Consumer<CompletableFuture<ModelResult>> check) {
    }

    @Test
    @Timeout(120)
    void aFutureCancelledOrCompletedFromOutsideWhileItsCallRunsOrWaitsLetsGoOfTheLateResult() throws Exception {
        ModelResult mine = new ModelResult(Map.of(), java.util.Set.of());
        List<FromOutside> ways = List.of(
                new FromOutside("cancel", f -> f.cancel(true), f -> assertThat(f).isCancelled()),
                new FromOutside("complete", f -> f.complete(mine), f -> assertThat(f.join()).isSameAs(mine)),
                new FromOutside("completeExceptionally", f -> f.completeExceptionally(new IllegalStateException("mine")),
                        f -> assertThatThrownBy(f::join).hasCauseInstanceOf(IllegalStateException.class)
                                .hasMessageContaining("mine")),
                new FromOutside("orTimeout", f -> f.orTimeout(5, TimeUnit.MILLISECONDS),
                        f -> assertThatThrownBy(() -> f.get(5, TimeUnit.SECONDS))
                                .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(TimeoutException.class)),
                new FromOutside("completeOnTimeout", f -> f.completeOnTimeout(mine, 5, TimeUnit.MILLISECONDS),
                        f -> assertThat(f.orTimeout(5, TimeUnit.SECONDS).join()).isSameAs(mine)));
        for (boolean batching : new boolean[] {false, true}) {
            for (FromOutside way : ways) {
                int exports = Dlpack.liveExports();
                long bytes = Dlpack.nativeBytesInUse();
                String name = way.name() + "-" + batching;
                PythonModel.Builder b = mixed(name, 0.1);
                try (PythonModel model = (batching ? b.batching(4, Duration.ZERO) : b).build()) {
                    reset(); // the warm-up's call
                    Tensor x = Tensor.of(xs(2, 2), 2, 2);
                    Tensor y = Tensor.of(xs(3, 1), 1, 2);
                    CompletableFuture<ModelResult> running = model.runAsync(Map.of("text", texts(2, 2), "x", x));
                    Models.await("len(__import__('text_review').calls_of('" + name + "')) == 1");
                    // a second call waits in the queue behind the running one (one worker)
                    CompletableFuture<ModelResult> queued = model.runAsync(Map.of("text", texts(3, 1), "x", y));
                    way.act().accept(running);
                    way.act().accept(queued);
                    x.close(); // the caller may let go of its inputs once its call is settled
                    y.close();
                    way.check().accept(running);
                    way.check().accept(queued);
                    Thread.sleep(200); // the running call's answer arrives, and is let go
                    assertThat(calls(name)).as(name + ": the queued call never ran").isEqualTo(1);
                    try (Tensor z = Tensor.of(xs(4, 3), 3, 2);
                         ModelResult r = model.run(Map.of("text", texts(4, 3), "x", z))) {
                        assertMixedAnswer(name, r, 4, 3); // the model goes on
                    }
                    assertAddsUp(model.stats(), 2);
                }
                nothingLeft(exports, bytes, false);
            }
        }
    }

    @Test
    @Timeout(60)
    void predictsTensorsThatComeAfterTheCallerGaveUpAreClosed() throws Exception {
        for (boolean batching : new boolean[] {false, true}) {
            int exports = Dlpack.liveExports();
            long bytes = Dlpack.nativeBytesInUse();
            PythonModel.Builder b = PythonModel.builder().python(Models.PY).name("predict-late-" + batching)
                    .factory("text_review", "doubles", 0.05).timeout(Duration.ofMillis(10));
            try (PythonModel model = (batching ? b.batching(4, Duration.ZERO) : b).build()) {
                for (int i = 0; i < 5; i++) {
                    try (Tensor x = Tensor.of(xs(i, 2), 2, 2)) {
                        assertThatThrownBy(() -> model.predict(x)).isInstanceOf(ModelTimeoutException.class);
                        // a virtual caller's call runs on a worker either way
                        AtomicReference<Throwable> thrown = new AtomicReference<>();
                        Thread.ofVirtual().start(() -> {
                            try {
                                model.predict(Map.of("input", x)).values().forEach(Tensor::close);
                            } catch (Throwable t) {
                                thrown.set(t);
                            }
                        }).join();
                        assertThat(thrown.get()).isInstanceOf(ModelTimeoutException.class);
                    }
                }
                Thread.sleep(200);
                assertThat(model.stats().timedOut()).isEqualTo(10);
            }
            nothingLeft(exports, bytes, false);
        }
    }

    @Test
    @Timeout(60)
    void aStackedTextBatchThatFailsRunsAgainAloneAndOnlyThePoisonedCallFails() throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        String name = "rerun";
        try (PythonModel model = mixed(name, 0).batching(32, Duration.ofMillis(200)).build()) {
            reset(); // the warm-up's call
            List<Tensor> inputs = new ArrayList<>();
            List<CompletableFuture<ModelResult>> futures = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                List<String> t = texts(i, 1 + i % 3);
                if (i == 5) {
                    t.set(1, "poison");
                }
                Tensor x = Tensor.of(xs(i, 1 + i % 3), 1 + i % 3, 2);
                inputs.add(x);
                futures.add(model.runAsync(Map.of("text", t, "x", x)));
            }
            for (int i = 0; i < 8; i++) {
                if (i == 5) {
                    int call = i;
                    assertThatThrownBy(() -> futures.get(call).join()).isInstanceOf(CompletionException.class)
                            .cause().isInstanceOf(PythonException.class).hasMessageContaining("a poisoned text");
                } else {
                    try (ModelResult r = futures.get(i).get(10, TimeUnit.SECONDS)) {
                        assertMixedAnswer(name, r, i, 1 + i % 3);
                    }
                }
            }
            inputs.forEach(Tensor::close);
            futures.clear(); // the failed one's PythonException holds its traceback, whose frames hold its input
            try (PyObject rows = Models.PY.eval("[c[1] for c in __import__('text_review').calls_of('rerun')]")) {
                // one stacked call of all 15 rows, then each call alone on its own rows
                assertThat(rows.toJava()).isEqualTo(List.of(15L, 1L, 2L, 3L, 1L, 2L, 3L, 1L, 2L));
            }
            assertThat(model.stats().failed()).isEqualTo(1);
            assertThat(model.stats().answered()).isEqualTo(7);
        }
        nothingLeft(exports, bytes, true);
    }

    /**
     * {@code Worker.answer} failing on a request's second output (here: a tensor closed meanwhile)
     * after it shared its rows of the first: that share is closed, so the model's array goes once
     * the batch's outputs are closed (white-box: the failure cannot be had through a model).
     */
    @Test
    @Timeout(60)
    void anAnswerThatFailsAfterSharingSomeOutputsClosesThoseShares() throws Exception {
        io.github.dlpack4j.ManagedTensor first;
        io.github.dlpack4j.ManagedTensor second;
        try (PyObject a = Models.PY.eval("__import__('text_review').kept(__import__('numpy').ones((4, 2), dtype='float32'))");
             PyObject b = Models.PY.eval("__import__('numpy').ones((4, 3), dtype='float32')")) {
            first = io.github.dlpack4j.python.PythonDlpack.fromDlpack(a);
            second = io.github.dlpack4j.python.PythonDlpack.fromDlpack(b);
        }
        second.close();
        ModelCall.Outputs out = new ModelCall.Outputs(List.of("a", "b"), List.of(first, second));
        java.lang.reflect.Method answer = Worker.class.getDeclaredMethod("answer", ModelCall.Outputs.class, List.class,
                long.class, long.class);
        answer.setAccessible(true);
        assertThatThrownBy(() -> answer.invoke(null, out, List.of(Signature.Kind.TENSOR, Signature.Kind.TENSOR), 1L, 2L))
                .isInstanceOf(java.lang.reflect.InvocationTargetException.class)
                .cause().isInstanceOf(IllegalStateException.class);
        out.close();
        assertThat(Models.pyLong("__import__('text_review').alive()")).as("the first output's array, held by a share").isZero();
    }

    @Test
    @Timeout(60)
    void aValueOutputThatFailsToConvertClosesTheTensorOutputImportedBeforeIt() throws Exception {
        for (boolean batching : new boolean[] {false, true}) {
            int exports = Dlpack.liveExports();
            long bytes = Dlpack.nativeBytesInUse();
            PythonModel.Builder b = PythonModel.builder().python(Models.PY).name("halfway-" + batching)
                    .factory("text_review", "tensor_then_value", "b'bytes'").textInput("text")
                    .output("ones", io.github.dlpack4j.DataType.FLOAT32, -1, 2).valueOutput("v");
            try (PythonModel model = (batching ? b.batching(4, Duration.ZERO) : b).build()) {
                for (int i = 0; i < 5; i++) {
                    assertThatThrownBy(() -> model.run(Map.of("text", List.of("ok", "bad"))))
                            .isInstanceOf(IllegalStateException.class).hasMessageContaining("value output v: row 1")
                            .hasMessageContaining("bytes");
                }
                try (ModelResult r = model.run(Map.of("text", "ok"))) {
                    assertThat(r.tensor("ones").toFloatArray()).containsExactly(1f, 1f);
                    assertThat(r.value("v")).isEqualTo(0L);
                }
            }
            nothingLeft(exports, bytes, false); // no Java collection needed: closed, not left to a cleaner
        }
    }

    /**
     * A value tree whose conversion fails on a later item (a lone surrogate, which UTF-8 cannot
     * carry) or that Java cannot hold as Python has it (two NaN keys: one Java key) must let go of
     * the Python objects converted before (here: objects of no Java type) when the call fails, not
     * when Java's collector comes by; and the failure names the output and the row.
     */
    @Test
    @Timeout(60)
    void theModelsObjectsInAValueThatFailsToConvertAreLetGoWhenTheCallFails() throws Exception {
        List<String> cases = List.of("[kept(Obj()), '\\ud800']", "{'a': kept(Obj()), 'b': '\\udc00'}",
                "{float('nan'): kept(Obj()), float('nan'): kept(Obj())}");
        for (String what : cases) {
            try (PythonModel model = PythonModel.builder().python(Models.PY).name("objects")
                    .factory("text_review", "returns", what).textInput("text").valueOutput("v").build()) {
                assertThatThrownBy(() -> model.run(Map.of("text", List.of("ok", "bad")))).as(what)
                        .isInstanceOf(IllegalStateException.class).hasMessageContaining("value output v")
                        .hasMessageContaining("row 1");
                // no System.gc(): a PyObject left to its cleaner keeps the model's object alive
                assertThat(Models.pyLong("__import__('text_review').alive()")).as(what + ": objects still alive").isZero();
            }
        }
    }

    @Test
    @Timeout(60)
    void aLoneSurrogateInATextOutputFailsTheCallNamingTheOutputAndTheRow() {
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("py-surrogate")
                .factory("text_review", "texts_returning", "'ok \\ud83d'").textInput("text").textOutput("t").build()) {
            assertThatThrownBy(() -> model.run(Map.of("text", List.of("x", "bad"))))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("text output t: row 1")
                    .hasMessageContaining("surrogate");
        }
    }

    // ------------------------------------------------------------------ text and tensor rows, stacked and split

    @Test
    @Timeout(60)
    void aStackedBatchWhoseTensorOutputIsItsInputBufferKeepsEachCallersRowsPastTheNextBatches() throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        String name = "aliasing";
        try (PythonModel model = PythonModel.builder().python(Models.PY).name(name).factory("text_review", "aliasing", name)
                .textInput("text").input("x", io.github.dlpack4j.DataType.FLOAT32, -1, 2).textOutput("reversed")
                .output("same", io.github.dlpack4j.DataType.FLOAT32, -1, 2).batching(16, Duration.ofMillis(100)).build()) {
            reset(); // the warm-up's call
            List<ModelResult> kept = new ArrayList<>();
            for (int round = 0; round < 4; round++) {
                List<CompletableFuture<ModelResult>> futures = new ArrayList<>();
                for (int i = 0; i < 5; i++) {
                    int call = round * 5 + i;
                    try (Tensor x = Tensor.of(xs(call, 1 + i % 3), 1 + i % 3, 2)) { // closed at once: the request holds it
                        futures.add(model.runAsync(Map.of("text", texts(call, 1 + i % 3), "x", x)));
                    }
                }
                for (CompletableFuture<ModelResult> f : futures) {
                    kept.add(f.get(10, TimeUnit.SECONDS));
                }
            }
            // every round stacked its five calls, and each one's output is its own rows of that round's buffer
            try (PyObject rows = Models.PY.eval("[c[1] for c in __import__('text_review').calls_of('aliasing')]")) {
                assertThat(rows.toJava()).isEqualTo(List.of(9L, 9L, 9L, 9L));
            }
            for (int round = 0; round < 4; round++) {
                for (int i = 0; i < 5; i++) {
                    int call = round * 5 + i;
                    ModelResult r = kept.get(call);
                    assertThat(r.tensor("same").toFloatArray()).as("call %d", call).containsExactly(xs(call, 1 + i % 3));
                    assertThat(r.texts("reversed")).containsExactlyElementsOf(texts(call, 1 + i % 3).stream()
                            .map(t -> new StringBuilder(t).reverse().toString()).toList());
                }
            }
            kept.forEach(ModelResult::close);
        }
        Models.assertReleasedSince(exports, bytes);
    }

    @Test
    @Timeout(60)
    void callsWithOtherInputKindsOrOrdersOrShapesAreNeverStackedTogether() throws Exception {
        String name = "kinds";
        try (PythonModel model = PythonModel.builder().python(Models.PY).name(name).factory("text_review", "kinds", name, 0.0)
                .valueOutput("tags").batching(64, Duration.ofMillis(200)).build()) {
            List<Tensor> tensors = new ArrayList<>();
            List<CompletableFuture<ModelResult>> futures = new ArrayList<>();
            List<String> expected = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                int rows = 1 + i % 2;
                Tensor two = Tensor.of(new float[rows * 2], rows, 2);
                Tensor three = Tensor.of(new float[rows * 3], rows, 3);
                tensors.add(two);
                tensors.add(three);
                List<String> t = texts(i, rows);
                Map<String, Object> in = new LinkedHashMap<>(); // without declared inputs the map's order is the model's
                switch (i % 5) {
                    case 0 -> { in.put("a", t); expected.add("text"); }
                    case 1 -> { in.put("a", two); expected.add("tensor2"); }
                    case 2 -> { in.put("a", three); expected.add("tensor3"); }
                    case 3 -> { in.put("a", t); in.put("b", two); expected.add("text,tensor2"); }
                    default -> { in.put("b", two); in.put("a", t); expected.add("tensor2,text"); }
                }
                futures.add(model.runAsync(in));
            }
            for (int i = 0; i < 20; i++) {
                try (ModelResult r = futures.get(i).get(10, TimeUnit.SECONDS)) {
                    assertThat(r.values("tags")).as("call %d", i).containsOnly(expected.get(i)).hasSize(1 + i % 2);
                }
            }
            tensors.forEach(Tensor::close);
            try (PyObject c = Models.PY.eval("sorted((c[1], c[2]) for c in __import__('text_review').calls_of('kinds'))")) {
                // five kinds of call, each kind's four calls (6 rows) stacked into one model call
                assertThat(c.toJava().toString()).isEqualTo(
                        "[[tensor2, 6], [tensor2,text, 6], [tensor3, 6], [text, 6], [text,tensor2, 6]]");
            }
        }
    }

    // ------------------------------------------------------------------ re-entrant text calls

    @Test
    @Timeout(60)
    void aModelThatCallsItselfBackThroughJavaWithTextRunsTheInnerCallsInlineAndLeaksNothing() throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        String name = "back";
        PythonModel[] self = new PythonModel[1];
        try (PyObject fn = Models.PY.function(args -> {
            try (PyObject a = args[0]; ModelResult r = self[0].run(Map.of("text", List.of((String) a.toJava())))) {
                return r.text("out");
            }
        })) {
            Models.PY.setGlobal("_review_fn", fn);
            Models.PY.exec("import text_review\ntext_review.fns['back'] = _review_fn\ndel _review_fn");
        }
        try (PythonModel model = PythonModel.builder().python(Models.PY).name(name).factory("text_review", "back", name)
                .textInput("text").textOutput("out").valueOutput("length").build()) {
            self[0] = model;
            ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
            List<Thread> callers = new ArrayList<>();
            for (int c = 0; c < 4; c++) {
                int caller = c;
                Runnable body = () -> {
                    for (int i = 0; i < 10; i++) {
                        String rest = "caller " + caller + " call " + i + " 😀";
                        try (ModelResult r = model.run(Map.of("text", List.of("3 " + rest, "0 " + rest)))) {
                            assertThat(r.texts("out")).containsExactly(rest + "<1<2<3", rest);
                            assertThat(r.values("length")).as("Python's lengths: code points")
                                    .containsExactly((long) (rest + "<1<2<3").codePointCount(0, rest.length() + 6),
                                            (long) rest.codePointCount(0, rest.length()));
                        } catch (Throwable t) {
                            failures.add(t);
                        }
                    }
                };
                // a virtual caller's call runs on the model's thread, whose inner calls run there too
                callers.add(caller % 2 == 0 ? Thread.ofPlatform().start(body) : Thread.ofVirtual().start(body));
            }
            for (Thread t : callers) {
                assertThat(t.join(Duration.ofSeconds(50))).as("no deadlock").isTrue();
            }
            assertThat(failures).isEmpty();
            assertThat(model.stats().answered()).as("40 calls, each with three inner calls").isEqualTo(160);
            assertAddsUp(model.stats(), 0);
        } finally {
            Models.PY.exec("text_review.fns.pop('back', None)");
        }
        nothingLeft(exports, bytes, false);
    }

    // ------------------------------------------------------------------ strings

    @Test
    @Timeout(60)
    void stringsAtTheEdgesOfUtf16CrossBothWaysIntactAloneAndStacked() throws Exception {
        String mb = "a".repeat(1 << 20);
        List<String> edges = List.of("😀", "end in a pair 😀", "\uD83D\uDE00\uD83D\uDE00", "\u0000", "\u0000\u0000",
                "\u0000 first", "last \u0000", mb, mb + "😀", "😀" + mb + "\u0000", "\uFFFF\uFFFE", "\u007F\u0080\u07FF\u0800");
        for (boolean batching : new boolean[] {false, true}) {
            PythonModel.Builder b = PythonModel.builder().python(Models.PY).name("edges-" + batching)
                    .factory("text_review", "echo").textInput("text").textOutput("text");
            try (PythonModel model = (batching ? b.batching(64, Duration.ofMillis(50)) : b).build()) {
                List<CompletableFuture<ModelResult>> futures = new ArrayList<>();
                for (String s : edges) {
                    futures.add(model.runAsync(Map.of("text", s)));
                }
                for (int i = 0; i < edges.size(); i++) {
                    try (ModelResult r = futures.get(i).get(30, TimeUnit.SECONDS)) {
                        assertThat(r.text("text")).as("string %d", i).isEqualTo(edges.get(i));
                    }
                }
                try (ModelResult r = model.run(Map.of("text", edges))) {
                    assertThat(r.texts("text")).containsExactlyElementsOf(edges);
                }
                assertThatThrownBy(() -> model.run(Map.of("text", "high at the end \uD83D")))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lone surrogate (U+D83D) at index 16");
                assertThatThrownBy(() -> model.run(Map.of("text", "\uDE00\uD83D reversed pair")))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("(U+DE00) at index 0");
                assertThatThrownBy(() -> model.run(Map.of("text", List.of("fine", mb + "\uD83D"))))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("row 1 has a lone surrogate");
            }
        }
    }

    // ------------------------------------------------------------------ values: deep, odd keys, huge

    /**
     * A value nested 10,000 levels deep: the call fails with an error that names the output (not a
     * bare {@link StackOverflowError}), the model's objects in it are let go, and the model goes
     * on; on a model thread and on the caller's own thread.
     */
    @Test
    @Timeout(60)
    void aValueNestedTenThousandLevelsDeepFailsTheCallClearlyAndLeaksNoPythonObject() throws Exception {
        for (boolean batching : new boolean[] {false, true}) {
            PythonModel.Builder b = PythonModel.builder().python(Models.PY).name("deep-" + batching)
                    .factory("text_review", "returns", "deep(10_000, kept(Obj()))").textInput("text").valueOutput("v");
            try (PythonModel model = (batching ? b.batching(4, Duration.ZERO) : b).build()) {
                Throwable thrown = null;
                try {
                    model.run(Map.of("text", List.of("ok", "bad"))).close();
                } catch (Throwable t) {
                    thrown = t;
                }
                assertThat(thrown).as("how the call failed").isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("value output v");
                for (int i = 0; i < 3; i++) {
                    System.gc();
                    Thread.sleep(20);
                }
                assertThat(Models.pyLong("__import__('text_review').alive()")).as("the model's objects still alive").isZero();
                try (ModelResult r = model.run(Map.of("text", "ok"))) {
                    assertThat(r.value("v")).isEqualTo(0L);
                }
            }
        }
    }

    @Test
    @Timeout(60)
    void aDictWithKeysOtherThanStrFailsNamingTheKeyAndLetsGoOfTheModelsObjects() throws Exception {
        Map<String, String> keys = new LinkedHashMap<>();
        keys.put("{1: kept(Obj())}", "key that is a Python int");
        keys.put("{None: kept(Obj())}", "key that is a Python None");
        keys.put("{(1, 'a'): kept(Obj())}", "key that is a Python list");
        keys.put("{frozenset([1]): kept(Obj())}", "key that is a Python frozenset");
        keys.put("{'fine': {2.5: kept(Obj())}}", "at [\"fine\"] has a key that is a Python float");
        keys.put("{'a': 1, True: kept(Obj())}", "key that is a Python bool");
        keys.forEach((what, message) -> {
            try (PythonModel model = PythonModel.builder().python(Models.PY).name("keys")
                    .factory("text_review", "returns", what).textInput("text").valueOutput("v").build()) {
                assertThatThrownBy(() -> model.run(Map.of("text", List.of("ok", "bad")))).as(what)
                        .isInstanceOf(IllegalStateException.class).hasMessageContaining("value output v: row 1")
                        .hasMessageContaining(message);
                assertThat(Models.pyLong("__import__('text_review').alive()")).as(what + ": objects still alive").isZero();
            }
        });
    }

    @Test
    @Timeout(120)
    void hugeListsConvertAndSplitByRows() throws Exception {
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("huge-value")
                .factory("text_review", "returns", "list(range(1_000_000))").textInput("text").valueOutput("v").build();
             ModelResult r = model.run(Map.of("text", List.of("ok", "bad")))) {
            List<?> big = (List<?>) r.values("v").get(1);
            assertThat(big).hasSize(1_000_000);
            assertThat(big.get(999_999)).isEqualTo(999_999L);
        }
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("huge-text").factory("text_review", "echo")
                .textInput("text").textOutput("text").batching(200_000, Duration.ofSeconds(5)).maxQueue(16).build()) {
            List<CompletableFuture<ModelResult>> futures = new ArrayList<>();
            List<List<String>> sent = new ArrayList<>();
            for (int c = 0; c < 4; c++) {
                List<String> rows = new ArrayList<>();
                for (int i = 0; i < 50_000; i++) {
                    rows.add(c + ":" + i);
                }
                sent.add(rows);
                futures.add(model.runAsync(Map.of("text", rows)));
            }
            for (int c = 0; c < 4; c++) {
                try (ModelResult r = futures.get(c).get(60, TimeUnit.SECONDS)) {
                    assertThat(r.texts("text")).containsExactlyElementsOf(sent.get(c));
                }
            }
            assertThat(model.stats().largestBatchRows()).as("the four calls in one model call").isEqualTo(200_000);
        }
    }
}
