package io.github.dlpack4j.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

import io.github.dlpack4j.model.ModelResult;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.Transformers;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * One generation streamed to Java against transformers' own {@code generate} in the same process,
 * on the project's small causal LM ({@code scripts/tiny-lm}; its directory in
 * {@code DLPACK4J_TINY_LM}): {@link Transformers#chat} through {@link PythonModel#stream}, the items
 * taken by a subscriber that requests them all, against {@code model.generate(do_sample=False)} with
 * a streamer that notes its first token, both 128 new tokens greedy on the same prompt. JMH times a
 * stream of 16 tokens; after it each fork prints five rounds ({@code [in-fork] textGeneration}
 * lines), each of three streams and three {@code generate} calls in turns: tokens/s of the streams
 * over {@code generate}'s (target at least 0.95x) and the median time to the first item over
 * {@code generate}'s median time to its first token (target at most 1.1x); and, in the same turns,
 * the stream's own generator (a copy of the model) consumed by Python, which tells the generator's
 * cost from the hand-off of its items to Java. Last, a {@code [in-fork] textGeneration hand-off} line
 * times the hand-off inside one generator, which notes each item's time inside it (the model's step)
 * and away from it (from its yield to its resumption: the consumer's time), streamed to Java and
 * looped over by Python (on the bench's thread, and on a new platform thread as the stream's is) in
 * turns: a figure that the speed torch has at the moment on a shared
 * machine leaves alone, where the rounds' ratios move by 10% from one round to the next.
 * {@code -p torchThreads=1} gives both sides one torch thread (torch's default is one per core).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class TextGenerationBench {
    private static final String MESSAGES = "[{\"role\": \"user\", \"content\": \"How do I share a tensor with PyTorch?\"}]";

    /** torch's intra-op threads on both sides (the loading thread's count, which the model's threads take); 0: torch's default. */
    @Param({"0"})
    public int torchThreads;

    private Python py;
    private PythonModel chat;
    private PyObject generate;
    private PyObject own;
    private PythonModel handoff;

    @Setup(Level.Trial)
    public void setUp() {
        String dir = System.getenv("DLPACK4J_TINY_LM");
        if (dir == null || !Files.isDirectory(Path.of(dir))) {
            throw new IllegalStateException("DLPACK4J_TINY_LM names no directory (" + dir + "): scripts/bench sets it from scripts/tiny-lm");
        }
        py = Python.start();
        if (torchThreads > 0) {
            py.exec("import torch\ntorch.set_num_threads(" + torchThreads + ")");
        }
        chat = Transformers.chat(Path.of(dir)).python(py).build();
        py.setGlobal("tiny_dir", dir);
        py.setGlobal("messages_json", MESSAGES);
        py.exec("""
                import json
                import time
                import torch
                import dlpack4j_text
                from transformers import AutoModelForCausalLM, AutoTokenizer
                from transformers.generation.streamers import BaseStreamer
                direct_tok = AutoTokenizer.from_pretrained(tiny_dir)
                direct_lm = dlpack4j_text._quietly(lambda: AutoModelForCausalLM.from_pretrained(tiny_dir)).eval()

                class FirstToken(BaseStreamer):
                    # generate puts the prompt first, then each new token: the time of the first of those
                    def __init__(self):
                        self.puts = 0
                        self.first = None
                    def put(self, value):
                        self.puts += 1
                        if self.puts == 2:
                            self.first = time.perf_counter()
                    def end(self):
                        pass

                def timed_generate(n):
                    # (seconds, seconds to the first token, tokens generated), as a Python program calls it
                    start = time.perf_counter()
                    enc = direct_tok.apply_chat_template(json.loads(messages_json), add_generation_prompt=True,
                                                         return_tensors="pt", return_dict=True)
                    streamer = FirstToken()
                    with torch.inference_mode():
                        out = direct_lm.generate(**enc, do_sample=False, max_new_tokens=n, streamer=streamer)
                    end = time.perf_counter()
                    return end - start, streamer.first - start, int(out.shape[1] - enc["input_ids"].shape[1])

                # the stream's own generator (a copy of the model), consumed by Python: what the stream costs without Java
                own_key, _ = dlpack4j_text.load_causal_lm(tiny_dir, "cpu")
                own_run = dlpack4j_text.chat_generator(own_key)

                # the stream's generator again, noting each item's time inside it (from the generator's
                # resumption to its yield: the model's step) and away from it (from its yield to the
                # resumption: the consumer's time, Java's hand-off or the body of Python's for loop)
                steps = {"inside": [], "away": []}
                noted = {}

                def handoff(key):
                    run = dlpack4j_text.chat_generator(key)
                    def timed(messages, parameters):
                        t = time.perf_counter()
                        for item in run(messages, parameters):
                            y = time.perf_counter()
                            steps["inside"].append(y - t)
                            yield item
                            t = time.perf_counter()
                            steps["away"].append(t - y)
                    return timed

                hand_run = handoff(dlpack4j_text.load_causal_lm(tiny_dir, "cpu")[0])

                def python_loop(n):
                    for item in hand_run([messages_json], [json.dumps({"max_new_tokens": n})]):
                        if "finish" in item:
                            pass

                def note(kind):
                    # the last run's times go to its kind's
                    for k, v in steps.items():
                        noted.setdefault((kind, k), []).extend(v)
                        v.clear()

                def noted_micros(kind, k, q):
                    v = sorted(noted.get((kind, k), [0.0]))
                    return v[int(q * (len(v) - 1))] * 1e6

                def timed_own(n):
                    start = time.perf_counter()
                    first, tokens = None, 0
                    for item in own_run([messages_json], [json.dumps({"max_new_tokens": n})]):
                        if first is None:
                            first = time.perf_counter()
                        if "finish" in item:
                            tokens = item["finish"]["completion_tokens"]
                    return time.perf_counter() - start, first - start, tokens
                """);
        generate = py.getGlobal("timed_generate");
        own = py.getGlobal("timed_own");
        handoff = PythonModel.builder().python(py).name("tiny-lm-handoff").source("""
                import __main__
                def make():
                    return __main__.hand_run
                """, "make").textInput(Transformers.MESSAGES).textInput(Transformers.PARAMETERS)
                .textOutput("delta").valueOutput(Transformers.FINISH)
                .warmUp(Map.of(Transformers.MESSAGES, MESSAGES, Transformers.PARAMETERS, "{\"max_new_tokens\": 1}")).build();
    }

    /** {@return seconds, seconds to the first item, tokens generated} of one stream of {@code n} tokens, all requested */
    private double[] stream(int n) throws Exception {
        return stream(chat, n);
    }

    private static double[] stream(PythonModel chat, int n) throws Exception {
        CompletableFuture<double[]> done = new CompletableFuture<>();
        long start = System.nanoTime();
        chat.stream(Map.of(Transformers.MESSAGES, MESSAGES, Transformers.PARAMETERS, "{\"max_new_tokens\": " + n + "}"))
                .subscribe(new Flow.Subscriber<>() {
                    private long first;
                    private long tokens;

                    @Override
                    public void onSubscribe(Flow.Subscription s) {
                        s.request(Long.MAX_VALUE);
                    }

                    @Override
                    public void onNext(ModelResult item) {
                        try (item) {
                            if (first == 0) {
                                first = System.nanoTime();
                            }
                            if (item.names().contains(Transformers.FINISH)) {
                                tokens = ((Number) ((Map<?, ?>) item.value(Transformers.FINISH)).get("completion_tokens"))
                                        .longValue();
                            }
                        }
                    }

                    @Override
                    public void onError(Throwable e) {
                        done.completeExceptionally(e);
                    }

                    @Override
                    public void onComplete() {
                        long end = System.nanoTime();
                        done.complete(new double[] {(end - start) / 1e9, (first - start) / 1e9, tokens});
                    }
                });
        return done.get(300, TimeUnit.SECONDS);
    }

    /** A stream of 16 new tokens, every item taken. */
    @Benchmark
    public double stream16() throws Exception {
        return stream(16)[2];
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        for (int round = 1; round <= 5; round++) {
            // Three of each kind a round, in turns whose order rotates, so that one slow moment of
            // this shared machine weighs a third of a round and falls on every kind alike.
            double[][][] runs = new double[3][3][]; // [stream, generate, own generator][turn] = {s, s to first, tokens}
            for (int k = 0; k < 3; k++) {
                for (int i = 0; i < 3; i++) {
                    int kind = (round + k + i) % 3;
                    runs[kind][k] = switch (kind) {
                        case 0 -> stream(128);
                        case 1 -> timed(generate);
                        default -> timed(own);
                    };
                }
            }
            double javaRate = rate(runs[0]);
            double pythonRate = rate(runs[1]);
            double directRate = rate(runs[2]);
            double javaTtft = medianFirst(runs[0]);
            double pythonTtft = medianFirst(runs[1]);
            System.out.printf("%n[in-fork] textGeneration round %d: 3 x 128 new tokens greedy: stream %.0f tokens/s"
                    + " (first item, median of 3, %.1f ms), generate %.0f tokens/s (first token %.1f ms);"
                    + " tokens/s over generate's (%.2fx), first item over first token (%.2fx); the stream's generator"
                    + " consumed by Python %.0f tokens/s, over generate's (%.2fx), the stream over it (%.2fx)", round,
                    javaRate, javaTtft * 1e3, pythonRate, pythonTtft * 1e3, javaRate / pythonRate, javaTtft / pythonTtft,
                    directRate, directRate / pythonRate, javaRate / directRate);
        }
        // Each item's time inside the same generator and away from it, streamed to Java and looped over
        // by Python (on this thread, and on a platform thread of its own) in turns: what the hand-off to
        // Java costs a token, apart from the speed torch has on this machine at the moment.
        try (PyObject loop = py.getGlobal("python_loop"); PyObject note = py.getGlobal("note");
             PyObject micros = py.getGlobal("noted_micros")) {
            for (int i = 0; i < 12; i++) {
                if (i % 3 == 0) {
                    stream(handoff, 128);
                } else if (i % 3 == 1) {
                    loop.call(128).close();
                } else { // as the stream's own thread is: a thread that Java started
                    Thread t = Thread.ofPlatform().start(() -> loop.call(128).close());
                    t.join();
                }
                note.call(i % 3 == 0 ? "java" : i % 3 == 1 ? "python" : "thread").close();
            }
            System.out.printf("%n[in-fork] textGeneration hand-off: 4 x 128 tokens each, in turns, the same generator:"
                    + " an item's time away from it to Java %.0f µs median (90th percentile %.0f µs), to Python's for"
                    + " loop %.1f µs (%.1f µs); its time inside it %.0f µs (streamed to Java), %.0f µs (Python's loop)"
                    + " and %.0f µs (Python's loop on a new platform thread); Java's time away, of a token's: %.1f%%%n",
                    micro(micros, "java", "away", 0.5), micro(micros, "java", "away", 0.9),
                    micro(micros, "python", "away", 0.5), micro(micros, "python", "away", 0.9),
                    micro(micros, "java", "inside", 0.5), micro(micros, "python", "inside", 0.5),
                    micro(micros, "thread", "inside", 0.5), 100 * micro(micros, "java", "away", 0.5)
                            / (micro(micros, "java", "away", 0.5) + micro(micros, "java", "inside", 0.5)));
        }
        System.out.println();
        generate.close();
        own.close();
        handoff.close();
        chat.close();
    }

    /** {@return seconds, seconds to the first token, tokens} of one of the Python baselines, 128 new tokens */
    private static double[] timed(PyObject baseline) {
        try (PyObject r = baseline.call(128)) {
            return new double[] {asDouble(r, 0), asDouble(r, 1), asDouble(r, 2)};
        }
    }

    /** {@return tokens/s over a kind's runs: their tokens over their seconds} */
    private static double rate(double[][] runs) {
        double seconds = 0;
        double tokens = 0;
        for (double[] r : runs) {
            seconds += r[0];
            tokens += r[2];
        }
        return tokens / seconds;
    }

    /** {@return the median of a kind's runs' seconds to their first token} */
    private static double medianFirst(double[][] runs) {
        double[] firsts = new double[runs.length];
        for (int i = 0; i < runs.length; i++) {
            firsts[i] = runs[i][1];
        }
        Arrays.sort(firsts);
        return firsts[firsts.length / 2];
    }

    private static double micro(PyObject micros, String kind, String part, double quantile) {
        try (PyObject r = micros.call(kind, part, quantile)) {
            return r.asDouble();
        }
    }

    private static double asDouble(PyObject tuple, int i) {
        try (PyObject v = tuple.get(i)) {
            return v.asDouble();
        }
    }
}
