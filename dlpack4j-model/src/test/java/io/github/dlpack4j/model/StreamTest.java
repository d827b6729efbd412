package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PythonException;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A generator model streamed to Java: order, back-pressure, cancellation, deadlines, errors, load and close. */
class StreamTest {
    @BeforeAll
    static void models() {
        Models.pythonModule("stream_models", """
                import time
                import numpy as np

                progress = {}   # per stream key: items the generator made so far
                finished = {}   # per stream key: how the generator's finally saw it end

                def words(delay=0.0, first_delay=0.0, fail_after=-1):
                    # yields each word of the text (with its index), after first_delay, delay between items
                    def run(texts):
                        key = texts[0]
                        progress[key] = 0
                        try:
                            time.sleep(first_delay)
                            for i, w in enumerate(key.split()):
                                if i == fail_after:
                                    raise ValueError(f"failed after {i} items")
                                progress[key] = i + 1
                                yield {"token": w, "index": i}
                                time.sleep(delay)
                            finished[key] = "ended"
                        except GeneratorExit:
                            finished[key] = "closed"
                            raise
                        finally:
                            finished.setdefault(key, "raised")
                    return run

                def forever(delay):
                    def run(texts):
                        key = texts[0]
                        try:
                            i = 0
                            while True:
                                yield f"{key} {i}"
                                i += 1
                                time.sleep(delay)
                        finally:
                            finished[key] = "closed"
                    return run

                def arrays():
                    # a tensor input, tensor and text outputs per item
                    def run(x):
                        a = np.from_dlpack(x)
                        for i in range(3):
                            yield {"y": (a * (i + 1)).astype(np.float32), "label": f"times {i + 1}"}
                    return run

                kinds = {  # per input text: one item's outputs, each a value its output must refuse or keep
                    "kept": {"label": "a", "info": {"k": [1, 2.5, None, True, "x"], "n": -3}},
                    "text-int": {"label": 7},
                    "value-nested-set": {"info": [{"a": {1, 2}}]},
                    "value-big-int": {"info": 2**70},
                    "value-bytes": {"info": b"raw"},
                    "tensor-str": {"y": "not a tensor"},
                    "tensor-list": {"y": [1.0, 2.0]},
                    "text-int-then-surrogate": {"label": 7, "info": "\\ud800"},
                    "tensor-surrogate": {"y": "\\ud800"},
                    "int-key": {1: "a"},
                    "text-surrogate": {"label": "a\\ud800"},
                    "value-surrogate": {"info": {"k": ["\\ud800"]}},
                }

                def one_item(with_tensor):
                    # yields the text's item, with a tensor beside its outputs if asked (the one-value-at-a-time route)
                    def run(texts):
                        item = dict(kinds.get(texts[0], kinds["kept"]))
                        if with_tensor:
                            item.setdefault("y", np.ones(2, np.float32))
                        yield item
                    return run

                def undeclared(with_tensor):
                    # no outputs declared: a str is a text, a dict a value, an array a tensor
                    def run(texts):
                        item = {"word": "w", "info": {"n": 1}}
                        if with_tensor:
                            item["y"] = np.full(2, 3, np.float32)
                        yield item
                    return run

                def not_a_generator():
                    return lambda texts: 42

                def reset():
                    progress.clear()
                    finished.clear()
                """);
    }

    /** A subscriber that requests {@code batch} items at a time and collects their texts. */
    static final class Collector implements Flow.Subscriber<ModelResult> {
        final CompletableFuture<List<String>> done = new CompletableFuture<>();
        final List<String> texts = Collections.synchronizedList(new ArrayList<>());
        final LinkedBlockingQueue<String> arrivals = new LinkedBlockingQueue<>();
        final String output;
        final long batch;
        volatile Flow.Subscription subscription;
        private long left;

        Collector(String output, long batch) {
            this.output = output;
            this.batch = batch;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            if (batch > 0) {
                left = batch;
                s.request(batch);
            }
        }

        @Override
        public void onNext(ModelResult item) {
            try (item) {
                String t = item.text(output);
                texts.add(t);
                arrivals.add(t);
            }
            if (batch > 0 && --left == 0) {
                left = batch;
                subscription.request(batch);
            }
        }

        @Override
        public void onError(Throwable e) {
            done.completeExceptionally(e);
        }

        @Override
        public void onComplete() {
            done.complete(List.copyOf(texts));
        }

        List<String> get() throws Exception {
            return done.get(30, TimeUnit.SECONDS);
        }
    }

    /** {@return a model whose stream yields "TEXT 0", "TEXT 1", ... a millisecond apart until cancelled} */
    private static PythonModel forever(String name) {
        return PythonModel.builder().python(Models.PY).name(name).factory("stream_models", "forever", 0.001)
                .textInput("text").textOutput("token").build();
    }

    private static PythonModel words(String name, Object... args) {
        return PythonModel.builder().python(Models.PY).name(name).factory("stream_models", "words", args)
                .textInput("text").textOutput("token").valueOutput("index").build();
    }

    @Test
    void aClosedStreamingModelsCallableIsFreedAtOnceNotLeftForPythonsCycleCollector() throws Exception {
        Models.pythonModule("held_models", """
                import weakref

                class Held:
                    def __call__(self, texts):
                        yield {"token": texts[0], "index": 0}

                refs = []

                def held():
                    h = Held()
                    refs.append(weakref.ref(h))
                    return h
                """);
        Models.PY.exec("import gc, held_models; gc.collect(); gc.disable()");
        try {
            try (PythonModel model = PythonModel.builder().python(Models.PY).name("held").factory("held_models", "held")
                    .textInput("text").textOutput("token").valueOutput("index").build()) {
                Collector c = new Collector("token", Long.MAX_VALUE);
                model.stream(Map.of("text", "x")).subscribe(c);
                assertThat(c.get()).containsExactly("x");
                assertThat(Models.pyLong("sum(1 for r in held_models.refs if r() is not None)")).isEqualTo(1);
            }
            assertThat(Models.pyLong("sum(1 for r in held_models.refs if r() is not None)"))
                    .as("the model's callable alive after close, with Python's cycle collector off").isZero();
        } finally {
            Models.PY.exec("import gc; gc.enable()");
        }
    }

    @Test
    void everyItemArrivesInOrderAndTheStreamCompletes() throws Exception {
        try (PythonModel model = words("words-order")) {
            Collector c = new Collector("token", Long.MAX_VALUE);
            model.stream(Map.of("text", "one two three four five")).subscribe(c);
            assertThat(c.get()).containsExactly("one", "two", "three", "four", "five");
            assertThat(model.stats().streamItems()).isEqualTo(5);
            assertThat(model.stats().answered()).isEqualTo(1);
            assertThat(model.stats().firstItemP50()).isPositive();
            assertThat(model.stats().batches()).as("a stream's steps are not batches").isZero();
        }
    }

    @Test
    void aSubscriberRequestingOneItemAtATimeAdvancesTheGeneratorOneItemAtATime() throws Exception {
        Models.PY.exec("import stream_models; stream_models.reset()");
        String text = "a b c d e f";
        try (PythonModel model = words("words-backpressure")) {
            Collector c = new Collector("token", 0); // requests nothing by itself
            model.stream(Map.of("text", text)).subscribe(c);
            Models.await("stream_models.progress.get('" + text + "') is None or True"); // subscribed
            Thread.sleep(100);
            assertThat(Models.pyLong("stream_models.progress.get('" + text + "', 0)")).as("nothing requested").isZero();
            for (int i = 1; i <= 6; i++) {
                c.subscription.request(1);
                assertThat(c.arrivals.poll(10, TimeUnit.SECONDS)).isNotNull();
                Thread.sleep(30); // the generator would run ahead now if it did
                assertThat(Models.pyLong("stream_models.progress['" + text + "']")).as("items made after %d requested", i)
                        .isEqualTo(i);
            }
            c.subscription.request(1);
            assertThat(c.get()).hasSize(6);
        }
    }

    @Test
    void cancellingMidStreamClosesTheGeneratorAndFreesTheWorker() throws Exception {
        Models.PY.exec("import stream_models; stream_models.reset()");
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        try (PythonModel model = forever("forever")) {
            Collector c = new Collector("token", 1);
            model.stream(Map.of("text", "endless")).subscribe(c);
            for (int i = 0; i < 5; i++) {
                assertThat(c.arrivals.poll(10, TimeUnit.SECONDS)).isEqualTo("endless " + i);
            }
            c.subscription.cancel();
            Models.await("stream_models.finished.get('endless') == 'closed'");
            // the one worker is free: another stream runs to its end
            Collector other = new Collector("token", 2);
            PythonModel quick = model;
            quick.stream(Map.of("text", "next")).subscribe(other);
            assertThat(other.arrivals.poll(10, TimeUnit.SECONDS)).isEqualTo("next 0");
            other.subscription.cancel();
            assertThat(c.done).isNotDone(); // a cancelled subscriber hears nothing more
        }
        Models.assertReleasedSince(exports, bytes);
    }

    /** A subscriber that takes everything, holds its first item a while, then cancels from inside onNext. */
    static final class CancelsOnFirst implements Flow.Subscriber<ModelResult> {
        final List<String> seen = Collections.synchronizedList(new ArrayList<>());
        final CompletableFuture<Void> cancelled = new CompletableFuture<>();
        final List<String> after = Collections.synchronizedList(new ArrayList<>());
        private final String output;
        private Flow.Subscription subscription;

        CancelsOnFirst(String output) {
            this.output = output;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(ModelResult item) {
            try (item) {
                if (cancelled.isDone()) {
                    after.add(item.text(output));
                    return;
                }
                seen.add(item.text(output));
                try {
                    Thread.sleep(300); // the generator runs ahead meanwhile: its items wait in the signal queue
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                subscription.cancel();
                cancelled.complete(null);
            }
        }

        @Override
        public void onError(Throwable e) {
            after.add("onError " + e);
        }

        @Override
        public void onComplete() {
            after.add("onComplete");
        }
    }

    @Test
    void aSubscriberThatCancelsInOnNextGetsNoFurtherSignalEvenForItemsAlreadyMade() throws Exception {
        Models.PY.exec("import stream_models; stream_models.reset()");
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        try (PythonModel model = forever("forever-cancel-in-onnext");
             PythonModel arrays = PythonModel.builder().python(Models.PY).name("arrays-cancel-in-onnext")
                .factory("stream_models", "arrays").input("x", DataType.FLOAT32, 2).output("y", DataType.FLOAT32, 2)
                .textOutput("label").build()) {
            CancelsOnFirst texts = new CancelsOnFirst("token");
            model.stream(Map.of("text", "queued")).subscribe(texts);
            texts.cancelled.get(10, TimeUnit.SECONDS);
            Models.await("stream_models.finished.get('queued') == 'closed'");
            assertThat(model.stats().streamItems()).as("the items its subscriber got").isEqualTo(1);
            CancelsOnFirst tensors = new CancelsOnFirst("label");
            try (Tensor x = Tensor.of(new float[] {1, 2}, 2)) {
                arrays.stream(Map.of("x", x)).subscribe(tensors);
            }
            tensors.cancelled.get(10, TimeUnit.SECONDS);
            Thread.sleep(200);
            assertThat(texts.seen).containsExactly("queued 0");
            assertThat(texts.after).as("signals after the cancel").isEmpty();
            assertThat(tensors.seen).containsExactly("times 1");
            assertThat(tensors.after).as("signals after the cancel").isEmpty();
            // its generator had made all three and ended before the cancel: the stats count what the subscriber heard
            assertThat(arrays.stats().streamItems()).isEqualTo(1);
            assertThat(arrays.stats().answered()).as("a stream cancelled before it heard its end").isZero();
            assertThat(arrays.stats().requests()).isEqualTo(1);
        }
        Models.assertReleasedSince(exports, bytes); // the items dropped after the cancel closed their tensors
    }

    @Test
    void aRefusedSubscriberWhoseOnSubscribeThrowsHearsNoError() throws Exception {
        try (PythonModel model = words("words-refused-throws")) {
            Flow.Publisher<ModelResult> p = model.stream(Map.of("text", "one"));
            Collector first = new Collector("token", Long.MAX_VALUE);
            p.subscribe(first);
            assertThat(first.get()).containsExactly("one");
            CompletableFuture<String> heard = new CompletableFuture<>();
            CompletableFuture<Void> subscribed = new CompletableFuture<>();
            p.subscribe(new Flow.Subscriber<>() {
                @Override
                public void onSubscribe(Flow.Subscription s) {
                    subscribed.complete(null);
                    throw new IllegalStateException("a subscriber that breaks rule 2.13");
                }

                @Override
                public void onNext(ModelResult item) {
                    item.close();
                    heard.complete("onNext");
                }

                @Override
                public void onError(Throwable e) {
                    heard.complete("onError " + e.getMessage());
                }

                @Override
                public void onComplete() {
                    heard.complete("onComplete");
                }
            });
            subscribed.get(10, TimeUnit.SECONDS);
            Thread.sleep(200);
            assertThat(heard).as("a subscriber whose onSubscribe threw is cancelled").isNotDone();
        }
    }

    @Test
    void noFirstItemWithinTheTimeoutFailsTheStreamAndClosesItsGenerator() throws Exception {
        Models.PY.exec("import stream_models; stream_models.reset()");
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("slow-first")
                .factory("stream_models", "words", 0.0, 0.5).textInput("text").textOutput("token").valueOutput("index")
                .timeout(Duration.ofMillis(100)).build()) {
            Collector c = new Collector("token", Long.MAX_VALUE);
            model.stream(Map.of("text", "late first item")).subscribe(c);
            assertThatThrownBy(c::get).isInstanceOf(ExecutionException.class).cause()
                    .isInstanceOf(ModelTimeoutException.class).hasMessageContaining("first item");
            Models.await("'late first item' in stream_models.finished");
            assertThat(model.stats().timedOut()).isEqualTo(1);
        }
    }

    @Test
    void aStreamPastItsStreamTimeoutFailsAfterSomeItems() throws Exception {
        Models.PY.exec("import stream_models; stream_models.reset()");
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("slow-stream")
                .factory("stream_models", "forever", 0.02).textInput("text").textOutput("token")
                .timeout(Duration.ofSeconds(5)).streamTimeout(Duration.ofMillis(300)).build()) {
            Collector c = new Collector("token", Long.MAX_VALUE);
            model.stream(Map.of("text", "ticking")).subscribe(c);
            assertThatThrownBy(c::get).isInstanceOf(ExecutionException.class).cause()
                    .isInstanceOf(ModelTimeoutException.class).hasMessageContaining("ran past its deadline");
            assertThat(c.texts.size()).isGreaterThan(2);
            Models.await("stream_models.finished.get('ticking') == 'closed'");
        }
    }

    @Test
    void aGeneratorThatRaisesAfterSomeItemsFailsTheStreamWithItsError() throws Exception {
        try (PythonModel model = words("words-raise", 0.0, 0.0, 2)) {
            Collector c = new Collector("token", Long.MAX_VALUE);
            model.stream(Map.of("text", "x y z w")).subscribe(c);
            assertThatThrownBy(c::get).isInstanceOf(ExecutionException.class).cause()
                    .isInstanceOf(PythonException.class).hasMessageContaining("failed after 2 items");
            assertThat(c.texts).containsExactly("x", "y");
            assertThat(model.stats().failed()).isEqualTo(1);
        }
    }

    @Test
    void aThousandConcurrentStreamsFromVirtualThreadsEachGetTheirOwnTokens() throws Exception {
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("words-1000")
                .factory("stream_models", "words").textInput("text").textOutput("token").valueOutput("index")
                .workers(2).maxQueue(2_000).build();
             var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Boolean>> own = new ArrayList<>();
            for (int i = 0; i < 1_000; i++) {
                int caller = i;
                own.add(threads.submit(() -> {
                    List<String> mine = List.of("c" + caller + "a", "c" + caller + "b", "c" + caller + "c", "😀" + caller);
                    Collector c = new Collector("token", 1 + caller % 3);
                    model.stream(Map.of("text", String.join(" ", mine))).subscribe(c);
                    return c.get().equals(mine);
                }));
            }
            for (Future<Boolean> f : own) {
                assertThat(f.get(120, TimeUnit.SECONDS)).isTrue();
            }
            assertThat(model.stats().streamItems()).isEqualTo(4_000);
        }
    }

    @Test
    void closeWithStreamsRunningEndsThemWithAClearErrorAndClosesTheirGenerators() throws Exception {
        Models.PY.exec("import stream_models; stream_models.reset()");
        PythonModel model = PythonModel.builder().python(Models.PY).name("close-streams")
                .factory("stream_models", "forever", 0.005).textInput("text").textOutput("token")
                .timeout(Duration.ofMillis(300)).workers(2).build();
        List<Collector> running = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Collector c = new Collector("token", Long.MAX_VALUE);
            model.stream(Map.of("text", "s" + i)).subscribe(c);
            running.add(c);
        }
        for (Collector c : running) {
            assertThat(c.arrivals.poll(10, TimeUnit.SECONDS)).isNotNull();
        }
        model.close();
        for (int i = 0; i < running.size(); i++) {
            Collector c = running.get(i);
            assertThatThrownBy(c::get).isInstanceOf(ExecutionException.class).cause()
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("was closed while this stream ran");
            Models.await("stream_models.finished.get('s" + i + "') == 'closed'");
        }
        assertThatThrownBy(() -> model.stream(Map.of("text", "after"))).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void itemsCarryTensorsAndTextsAndTensorInputsStayOpenUntilTheStreamStarted() throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("arrays").factory("stream_models", "arrays")
                .input("x", DataType.FLOAT32, 2).output("y", DataType.FLOAT32, 2).textOutput("label").build()) {
            List<float[]> ys = Collections.synchronizedList(new ArrayList<>());
            CompletableFuture<List<String>> labels = new CompletableFuture<>();
            List<String> seen = Collections.synchronizedList(new ArrayList<>());
            Flow.Publisher<ModelResult> p;
            try (Tensor x = Tensor.of(new float[] {1, 2}, 2)) {
                p = model.stream(Map.of("x", x));
                p.subscribe(new Flow.Subscriber<>() {
                    @Override
                    public void onSubscribe(Flow.Subscription s) {
                        s.request(Long.MAX_VALUE);
                    }

                    @Override
                    public void onNext(ModelResult item) {
                        try (item) {
                            ys.add(item.tensor("y").toFloatArray());
                            seen.add(item.text("label"));
                        }
                    }

                    @Override
                    public void onError(Throwable e) {
                        labels.completeExceptionally(e);
                    }

                    @Override
                    public void onComplete() {
                        labels.complete(List.copyOf(seen));
                    }
                });
            }
            assertThat(labels.get(10, TimeUnit.SECONDS)).containsExactly("times 1", "times 2", "times 3");
            assertThat(ys).satisfiesExactly(y -> assertThat(y).containsExactly(1f, 2f), y -> assertThat(y).containsExactly(2f, 4f),
                    y -> assertThat(y).containsExactly(3f, 6f));
            Collector second = new Collector("label", 1);
            p.subscribe(second);
            assertThatThrownBy(second::get).cause().isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("one subscriber");
        }
        Models.assertReleasedSince(exports, bytes);
    }

    /** {@return the one item's outputs (a tensor as its floats, label and word texts, the rest values), or the stream's error as "error: " and its message} */
    private static Map<String, Object> oneItem(PythonModel model, String text) throws Exception {
        CompletableFuture<Map<String, Object>> done = new CompletableFuture<>();
        Map<String, Object> seen = Collections.synchronizedMap(new java.util.LinkedHashMap<>());
        model.stream(Map.of("text", text)).subscribe(new Flow.Subscriber<>() {
            @Override
            public void onSubscribe(Flow.Subscription s) {
                s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(ModelResult item) {
                try (item) {
                    for (String n : item.names()) {
                        seen.put(n, switch (n) {
                            case "y" -> java.util.Arrays.toString(item.tensor(n).toFloatArray());
                            case "label", "word" -> item.text(n);
                            default -> item.values(n);
                        });
                    }
                } catch (RuntimeException e) {
                    seen.put("onNext", e.toString());
                }
            }

            @Override
            public void onError(Throwable e) {
                done.complete(Map.of("error", e.getClass().getSimpleName() + ": " + e.getMessage()));
            }

            @Override
            public void onComplete() {
                done.complete(Map.copyOf(seen));
            }
        });
        return done.get(30, TimeUnit.SECONDS);
    }

    @Test
    void anItemOfPlainValuesAndAnItemWithATensorKeepAndRefuseTheSameValuesWithTheSameErrors() throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        try (PythonModel plain = PythonModel.builder().python(Models.PY).name("refusing").factory("stream_models", "one_item", false)
                .textInput("text").output("y", DataType.FLOAT32, 2).textOutput("label").valueOutput("info").build();
             PythonModel withTensor = PythonModel.builder().python(Models.PY).name("refusing")
                     .factory("stream_models", "one_item", true).textInput("text").output("y", DataType.FLOAT32, 2)
                     .textOutput("label").valueOutput("info").build()) {
            Map<String, Object> kept = oneItem(plain, "kept");
            assertThat(kept).containsEntry("label", "a")
                    .containsEntry("info", List.of(Map.of("k", java.util.Arrays.asList(1L, 2.5, null, true, "x"), "n", -3L)));
            Map<String, Object> keptWithTensor = new java.util.HashMap<>(oneItem(withTensor, "kept"));
            assertThat(keptWithTensor.remove("y")).isEqualTo("[1.0, 1.0]");
            assertThat(keptWithTensor).isEqualTo(kept);
            for (String kind : List.of("text-int", "value-nested-set", "value-big-int", "value-bytes", "tensor-str",
                    "tensor-list", "text-int-then-surrogate", "tensor-surrogate", "int-key", "text-surrogate",
                    "value-surrogate")) {
                Map<String, Object> refused = oneItem(plain, kind);
                assertThat(refused).as(kind).containsOnlyKeys("error");
                assertThat(oneItem(withTensor, kind)).as(kind).isEqualTo(refused);
            }
            assertThat(oneItem(plain, "text-int").get("error")).asString()
                    .contains("text output label of a stream's item is a Python int");
            assertThat(oneItem(plain, "value-nested-set").get("error")).asString().contains("is a Python set");
            assertThat(oneItem(plain, "value-big-int").get("error")).asString().contains("beyond 64 bits");
            assertThat(oneItem(plain, "text-int-then-surrogate").get("error")).asString()
                    .contains("text output label of a stream's item is a Python int");
            assertThat(oneItem(plain, "text-surrogate").get("error")).asString()
                    .contains("output label of a stream's item cannot be converted to Java");
            assertThat(oneItem(plain, "value-surrogate").get("error")).asString()
                    .contains("output info of a stream's item cannot be converted to Java");
            assertThat(oneItem(plain, "int-key").get("error")).asString()
                    .contains("yielded a dict with a key of type int: 1; its keys are output names (str)");
        }
        try (PythonModel plain = PythonModel.builder().python(Models.PY).name("undeclared").factory("stream_models", "undeclared", false)
                .textInput("text").build();
             PythonModel withTensor = PythonModel.builder().python(Models.PY).name("undeclared")
                     .factory("stream_models", "undeclared", true).textInput("text").build()) {
            assertThat(oneItem(plain, "any")).isEqualTo(Map.of("word", "w", "info", List.of(Map.of("n", 1L))));
            assertThat(oneItem(withTensor, "any")).isEqualTo(Map.of("word", "w", "info", List.of(Map.of("n", 1L)),
                    "y", "[3.0, 3.0]"));
        }
        Models.assertReleasedSince(exports, bytes);
    }

    @Test
    void aModelThatReturnsNoIterableFailsTheStreamClearly() throws Exception {
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("not-a-generator")
                .factory("stream_models", "not_a_generator").build()) { // no inputs declared: no warm-up
            Collector c = new Collector("output", Long.MAX_VALUE);
            model.stream(Map.of("text", "x")).subscribe(c);
            assertThatThrownBy(c::get).cause().isInstanceOf(PythonException.class)
                    .hasMessageContaining("returned a int to a stream, not a generator or iterator");
        }
    }

    @Test
    void tooManyOpenStreamsRefuseTheNextSubscription() throws Exception {
        Models.PY.exec("import stream_models; stream_models.reset()");
        try (PythonModel model = PythonModel.builder().python(Models.PY).name("overload-streams")
                .factory("stream_models", "forever", 0.01).textInput("text").textOutput("token").maxQueue(2).build()) {
            List<Collector> open = new ArrayList<>();
            for (int i = 0; i < 3; i++) { // maxQueue 2 plus 1 worker
                Collector c = new Collector("token", 1);
                model.stream(Map.of("text", "o" + i)).subscribe(c);
                open.add(c);
            }
            Collector refused = new Collector("token", 1);
            model.stream(Map.of("text", "one too many")).subscribe(refused);
            assertThatThrownBy(refused::get).cause().isInstanceOf(ModelOverloadedException.class);
            assertThat(model.stats().rejected()).isEqualTo(1);
            open.forEach(c -> c.subscription.cancel());
        }
    }

    @Test
    void badInputsAreRefusedWhenTheStreamIsMadeBeforePythonRuns() {
        try (PythonModel model = words("words-bad")) {
            assertThatThrownBy(() -> model.stream(Map.of("text", List.of()))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("empty list");
        }
    }
}
