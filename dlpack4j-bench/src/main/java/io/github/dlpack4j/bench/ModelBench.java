package io.github.dlpack4j.bench;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.python.ExchangeApi;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.DoubleSupplier;
import java.util.function.ToDoubleFunction;
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
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * dlpack4j-model's {@link PythonModel#predict(Tensor)} against the same TorchScript file called by
 * Python in the same process ({@code model(x)} under {@code torch.inference_mode()}, Python's garbage
 * collector on), and against the hand-written request loop of docs/serving.md; one torch thread on
 * both sides. After JMH's measurement each fork times, in turns ({@code [in-fork]} lines):
 * <ul>
 *   <li>{@code modelPredict}: predict from a platform thread and from a virtual thread, one row, no
 *       batching, over Python's {@code model(x)} (targets at most 1.1x, and the virtual thread at
 *       most 5 µs more), and over the hand-written loop (what the runtime costs per call): the
 *       median over short rounds of each round's ratio, with its quartiles;</li>
 *   <li>the floors of those two targets ({@code floor} lines): a virtual thread's bare hand-off to a
 *       platform thread and back ({@link HandOff}), and the torch tensor plus output import that any
 *       call from Java needs, each beside the figure it bounds;</li>
 *   <li>{@code modelLoop}: a user's plain loop, five rounds each after a burst of 64 concurrent
 *       callers, every round printed: predict from a platform thread over Python's call on a new
 *       tensor each call (target at most 1.1x in every round), and from a virtual thread beside the
 *       bare hand-off's floor;</li>
 *   <li>{@code modelThroughput} (mlp): 64 virtual threads calling predict with one row each, for 2 s,
 *       with {@code batching(64, 1 ms)} and without: requests/s and p99 (target at least 3x).</li>
 * </ul>
 * {@code -p model=resnet18} runs the same for torchvision's resnet18 on one 224x224 image (target
 * at most 1.05x).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class ModelBench {
    private static final String PYTHON = """
            import gc
            import os
            import sys
            import time
            import torch

            torch.set_num_threads(1)

            def save(kind, path):
                # The serving example's models (its resnet18 loads where torchvision's C operators do not).
                root = os.environ.get("DLPACK4J_ROOT", os.getcwd())
                sys.path.insert(0, os.path.join(root, "examples", "serve-torch", "python"))
                import serve_models
                torch.jit.save(torch.jit.script(serve_models.build(kind)), path)

            def python_timer(path, shape):
                # The model as a Python service calls it: the same file, inference mode, the GC on.
                model = torch.jit.load(path, map_location="cpu")
                model.eval()
                x = torch.randn(*shape)
                a = x.numpy().copy()
                def per_call(seconds, cpu=False, fresh=False, calls=0):
                    # ns per call of wall-clock time, or with cpu of this thread's CPU time; with fresh
                    # the model gets a new tensor over the same memory each call (torch.from_dlpack of
                    # a NumPy array), as a service that answers requests makes one per request; with
                    # calls, exactly that many calls, however long they take
                    gc.enable()
                    n = 0
                    start = time.perf_counter_ns()
                    cpu_start = time.thread_time_ns()
                    while True:
                        if fresh:
                            y = torch.from_dlpack(a)
                            with torch.inference_mode():
                                model(y)
                        else:
                            with torch.inference_mode():
                                model(x)
                        n += 1
                        elapsed = time.perf_counter_ns() - start
                        if (calls and n >= calls) or (not calls and elapsed >= seconds * 1e9):
                            return (time.thread_time_ns() - cpu_start) / n if cpu else elapsed / n
                return per_call
            """;

    @Param({"mlp"})
    public String model;

    private Python py;
    private Path dir;
    private PythonModel unbatched;
    private Tensor x;
    private long[] shape;
    private PyObject pythonPerCall;
    // The hand-written loop of docs/serving.md: a buffer torch views once, one GIL scope per call.
    private Tensor buffer;
    private PyObject bufferView;
    private PyObject handModel;
    // The same model behind torch's C++ inference-mode guard, as the runtime's Runner enters it.
    private PyObject guardedModel;
    private float[] request;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        py = Python.start();
        py.exec(PYTHON);
        dir = Files.createTempDirectory("dlpack4j-modelbench");
        Path file = dir.resolve(model + ".pt");
        shape = model.equals("mlp") ? new long[] {1, 256} : new long[] {1, 3, 224, 224};
        long[] outShape = model.equals("mlp") ? new long[] {-1, 16} : new long[] {-1, 1000};
        try (PyObject save = py.getGlobal("save"); PyObject timer = py.getGlobal("python_timer")) {
            save.call(model, file.toString()).close();
            pythonPerCall = timer.call(file.toString(), List.of(Arrays.stream(shape).boxed().toArray()));
        }
        unbatched = PythonModel.builder().python(py).name(model).torchScript(file)
                .input("x", DataType.FLOAT32, inputShape()).output("y", DataType.FLOAT32, outShape).build();
        x = Tensor.of(random(shape), shape);
        request = random(shape);
        buffer = Tensor.zeros(DataType.FLOAT32, shape);
        try (PyObject shared = PythonDlpack.toPython(buffer); PyObject torch = py.importModule("torch");
             PyObject fromDlpack = torch.attr("from_dlpack")) {
            bufferView = fromDlpack.call(shared);
        }
        py.exec("_m = torch.jit.load(" + pyString(file.toString()) + ", map_location='cpu')\n_m.eval()\n"
                + "def hand_infer(x):\n    with torch.inference_mode():\n        return _m(x)\n");
        handModel = py.getGlobal("hand_infer");
        py.exec("_guard = getattr(torch._C, '_InferenceMode', None)\n"
                + "def guarded_infer(x):\n    with _guard(True):\n        return _m(x)\n");
        guardedModel = py.getGlobal("guarded_infer");
        // JMH warms predict from its own platform thread only: the virtual thread's path (its looks,
        // its park and unpark) and the hand-written loop, timed after the measurement, are warmed
        // here, before JMH's warm-up, so that the JIT has seen every path before any is timed (a
        // virtual thread's first seconds of mlp calls, in a loop on their own, ran at 2-8x its later
        // per-call time).
        long warmNanos = 2_000_000_000L;
        try {
            Thread.ofVirtual().start(() -> perCall(this::predict, warmNanos)).join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        perCall(this::handWrittenLoop, warmNanos);
    }

    private long[] inputShape() {
        long[] s = shape.clone();
        s[0] = -1;
        return s;
    }

    private static String pyString(String s) {
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
    }

    private static float[] random(long[] shape) {
        float[] v = new float[Math.toIntExact(Arrays.stream(shape).reduce(1, (a, b) -> a * b))];
        Random r = new java.util.Random(42);
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) r.nextGaussian();
        }
        return v;
    }

    /** {@code predict} from the benchmark's (platform) thread, the answer read and closed. */
    @Benchmark
    public float predict() {
        try (Tensor y = unbatched.predict(x)) {
            return y.withData(s -> s.getAtIndex(ValueLayout.JAVA_FLOAT, 0));
        }
    }

    /** The request loop of docs/serving.md: the input copied into a buffer torch views, one GIL scope. */
    @Benchmark
    public float handWrittenLoop() {
        return py.withGil(() -> {
            buffer.withData(in -> {
                MemorySegment.copy(request, 0, in, ValueLayout.JAVA_FLOAT, 0, request.length);
                return null;
            });
            try (PyObject y = handModel.call(bufferView); ManagedTensor out = PythonDlpack.fromDlpack(y)) {
                return out.tensor().withData(s -> s.getAtIndex(ValueLayout.JAVA_FLOAT, 0));
            }
        });
    }

    @TearDown(Level.Trial)
    public void tearDown(BenchmarkParams params) throws Exception {
        String name = params.getBenchmark();
        if (name.endsWith(".predict")) {
            try (PyObject torch = py.importModule("torch");
                 PyObject empty = torch.callMethod("empty", 0);
                 HandOff spinning = new HandOff(true)) {
                ExchangeApi api = ExchangeApi.fromObject(empty).orElseThrow();
                // The call of the model from Java with nothing else: a torch tensor over x, the model, the import.
                Runnable modelCall = () -> py.withGil(() -> {
                    try (PyObject t = api.toPyObject(x); PyObject y = guardedModel.call(t);
                         ManagedTensor out = PythonDlpack.fromDlpack(y)) {
                        return out.tensor().withData(s -> s.getAtIndex(ValueLayout.JAVA_FLOAT, 0));
                    }
                });
                // torch's thread count is per thread: the hand-off's thread gets one, as the runtime's threads do.
                spinning.call(() -> py.exec("torch.set_num_threads(1)"));
                double[] figures = printPredict(modelCall, spinning);
                printFloors(figures, api, modelCall, spinning);
                printLoopsAfterBursts(modelCall, spinning);
            }
            if (model.equals("mlp")) {
                printThroughput();
            }
        }
        unbatched.close();
        py.withGil(() -> {
            bufferView.close();
            handModel.close();
            guardedModel.close();
            pythonPerCall.close();
        });
        buffer.close();
        x.close();
        try (var files = Files.list(dir)) {
            for (Path p : files.toList()) {
                Files.delete(p);
            }
        }
        Files.delete(dir);
    }

    /**
     * The per-call figures, timed in short rounds taken in turns (the order reversed every other
     * round, so that a drift of the machine's speed weighs on each kind alike). The targets are
     * judged by the median over the rounds of each round's own ratio (and difference): a round's
     * kinds run within a fraction of a second of each other, so a disturbance that lasts longer
     * slows them together and cancels out, where the best round of each kind, taken on its own,
     * may come from a quiet moment of one kind and a busy one of the other. The best rounds are
     * printed too.
     *
     * <p>The same rounds time the floor of the virtual thread's figure: the model's call from Java
     * with nothing around it, on the platform thread and handed off from a virtual thread to a
     * platform thread of its own ({@link HandOff}, which looks as the runtime does), so that the
     * runtime's own part of the virtual thread's cost is judged round by round against a hand-off
     * timed in the same stretch of the machine.
     *
     * @param modelCall the model's call from Java with nothing around it
     * @param spinning  the bare hand-off
     *
     * @return the best ns per call of predict from a platform thread, from a virtual thread, of Python's
     *         call, and of the model's call from Java on the platform thread and handed off
     */
    private double[] printPredict(Runnable modelCall, HandOff spinning) throws InterruptedException {
        boolean mlp = model.equals("mlp");
        double roundSeconds = mlp ? 0.05 : 0.5;
        int rounds = mlp ? 31 : 9;
        long roundNanos = (long) (roundSeconds * 1e9);
        // platform, virtual, hand-written loop, Python, Python on a fresh tensor each call, the model's
        // call from Java on the platform thread, the same handed off from a virtual thread
        int kinds = 7;
        DoubleSupplier bareCall = () -> {
            modelCall.run();
            return 0;
        };
        double[][] perRound = new double[rounds][kinds];
        for (int round = 0; round < rounds; round++) {
            for (int i = 0; i < kinds; i++) {
                int kind = round % 2 == 0 ? i : kinds - 1 - i;
                perRound[round][kind] = switch (kind) {
                    case 0 -> perCall(this::predict, roundNanos);
                    case 1 -> inVirtualThread(this::predict, roundNanos / 1_000_000);
                    case 2 -> perCall(this::handWrittenLoop, roundNanos);
                    case 5 -> perCall(bareCall, roundNanos);
                    case 6 -> inVirtualThread(() -> spinning.call(modelCall), roundNanos / 1_000_000);
                    default -> {
                        try (PyObject ns = pythonPerCall.call(roundSeconds, false, kind == 4)) {
                            yield ns.asDouble();
                        }
                    }
                };
            }
        }
        double[] best = new double[kinds];
        for (int kind = 0; kind < kinds; kind++) {
            int k = kind;
            best[kind] = Arrays.stream(perRound).mapToDouble(r -> r[k]).min().orElseThrow();
        }
        double[] ratio = quartiles(perRound, r -> r[0] / r[3]);
        double[] virtualOver = quartiles(perRound, r -> (r[1] - r[0]) / 1e3);
        double[] cost = quartiles(perRound, r -> (r[0] - r[2]) / 1e3);
        double[] fresh = quartiles(perRound, r -> r[4] / r[3]);
        double[] overFresh = quartiles(perRound, r -> r[0] / r[4]);
        System.out.printf("%n[in-fork] modelPredict %s: predict over Python's call, median of %d rounds taken in turns"
                        + " (%.2fx), quartiles %.2f-%.2fx; from a virtual thread %+.1f us over the platform thread"
                        + " (quartiles %+.1f to %+.1f us); over the hand-written loop %+.1f us a call (quartiles %+.1f"
                        + " to %+.1f us); best rounds: predict %.1f us, from a virtual thread %.1f us, the hand-written"
                        + " loop %.1f us, Python's call %.1f us%n",
                model, rounds, ratio[1], ratio[0], ratio[2], virtualOver[1], virtualOver[0], virtualOver[2], cost[1],
                cost[0], cost[2], best[0] / 1e3, best[1] / 1e3, best[2] / 1e3, best[3] / 1e3);
        System.out.printf("%n[in-fork] modelPredict %s, Python's call on a new tensor each call (torch.from_dlpack of"
                        + " a NumPy array, as a service makes one per request): over its call on a tensor it keeps,"
                        + " median of the same rounds (%.2fx), quartiles %.2f-%.2fx; predict over it (%.2fx), quartiles"
                        + " %.2f-%.2fx; best round %.1f us%n",
                model, fresh[1], fresh[0], fresh[2], overFresh[1], overFresh[0], overFresh[2], best[4] / 1e3);
        double[] handOff = quartiles(perRound, r -> (r[6] - r[5]) / 1e3);
        double[] runtimeOwn = quartiles(perRound, r -> ((r[1] - r[0]) - (r[6] - r[5])) / 1e3);
        System.out.printf("%n[in-fork] modelPredict %s, a virtual thread's bare hand-off of the model's call from Java to a"
                        + " platform thread (no runtime) over the same call on a platform thread, median of the same"
                        + " rounds %+.1f us (quartiles %+.1f to %+.1f us); predict's virtual thread over the platform"
                        + " thread less that, round by round: %+.1f us (quartiles %+.1f to %+.1f us)%n",
                model, handOff[1], handOff[0], handOff[2], runtimeOwn[1], runtimeOwn[0], runtimeOwn[2]);
        return new double[] {best[0], best[1], best[3], best[5], best[6]};
    }

    /**
     * A user's plain loop, as a user measures it: in each of five rounds, first a burst of 64
     * concurrent callers (virtual threads, 20 calls each), then the best of three loops of 2,000
     * calls of each kind, in turns: predict from a platform thread, Python's call on a new tensor
     * each call and on a tensor it keeps, predict from a virtual thread, and beside it the bare
     * hand-off of the model's call from a virtual thread and that call on the platform thread (the
     * floor of the virtual thread's figure, in the same round). Every round is printed, not only a
     * summary: the target holds only if it holds in each.
     */
    private void printLoopsAfterBursts(Runnable modelCall, HandOff spinning) throws InterruptedException {
        int calls = model.equals("mlp") ? 2_000 : 100;
        DoubleSupplier bareCall = () -> {
            modelCall.run();
            return 0;
        };
        StringBuilder rounds = new StringBuilder();
        double worstRatio = 0;
        double worstVirtual = Double.NEGATIVE_INFINITY;
        double worstOverFloor = Double.NEGATIVE_INFINITY;
        for (int round = 0; round < 5; round++) {
            burst(64, 20);
            double[] best = new double[6];
            Arrays.fill(best, Double.MAX_VALUE);
            for (int loop = 0; loop < 3; loop++) {
                best[0] = Math.min(best[0], loop(this::predict, calls));
                try (PyObject fresh = pythonPerCall.call(0.0, false, true, calls);
                     PyObject kept = pythonPerCall.call(0.0, false, false, calls)) {
                    best[1] = Math.min(best[1], fresh.asDouble());
                    best[2] = Math.min(best[2], kept.asDouble());
                }
                best[3] = Math.min(best[3], inVirtualThread(() -> loop(this::predict, calls)));
                best[4] = Math.min(best[4], inVirtualThread(() -> loop(() -> {
                    spinning.call(modelCall);
                    return 0;
                }, calls)));
                best[5] = Math.min(best[5], loop(bareCall, calls));
            }
            double ratio = best[0] / best[1];
            double virtualOver = (best[3] - best[0]) / 1e3;
            double floorOver = (best[4] - best[5]) / 1e3;
            worstRatio = Math.max(worstRatio, ratio);
            worstVirtual = Math.max(worstVirtual, virtualOver);
            worstOverFloor = Math.max(worstOverFloor, virtualOver - floorOver);
            rounds.append(String.format("%n[in-fork]   round %d after a burst of 64 callers: predict %.1f us, Python's"
                            + " call on a new tensor %.1f us (%.2fx), on a kept one %.1f us (%.2fx); from a virtual thread"
                            + " %+.1f us over the platform thread, the bare hand-off %+.1f us over the call on the platform"
                            + " thread", round + 1, best[0] / 1e3, best[1] / 1e3, ratio, best[2] / 1e3, best[0] / best[2],
                    virtualOver, floorOver));
        }
        System.out.printf("%n[in-fork] modelLoop %s: the best of three loops of %,d calls in each of five rounds after"
                        + " bursts, predict over Python's call on a new tensor each call, worst round (%.2fx); from a"
                        + " virtual thread, worst round %+.1f us over the platform thread, %+.1f us over the bare hand-off's"
                        + " own cost%s%n",
                model, calls, worstRatio, worstVirtual, worstOverFloor, rounds);
    }

    /** {@code threads} virtual threads calling predict {@code calls} times each, at once; returns when all are done. */
    private void burst(int threads, int calls) throws InterruptedException {
        List<Thread> started = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            started.add(Thread.ofVirtual().start(() -> {
                try (Tensor in = Tensor.of(random(shape), shape)) {
                    for (int i = 0; i < calls; i++) {
                        unbatched.predict(in).close();
                    }
                }
            }));
        }
        for (Thread t : started) {
            t.join();
        }
    }

    /** {@return the ns per call of exactly {@code calls} calls of {@code call} on this thread} */
    private static double loop(DoubleSupplier call, int calls) {
        long start = System.nanoTime();
        for (int i = 0; i < calls; i++) {
            call.getAsDouble();
        }
        return (double) (System.nanoTime() - start) / calls;
    }

    /** {@return what {@code timed} returns, run on a new virtual thread} */
    private static double inVirtualThread(DoubleSupplier timed) throws InterruptedException {
        double[] ns = new double[1];
        Thread.ofVirtual().start(() -> ns[0] = timed.getAsDouble()).join();
        return ns[0];
    }

    /** {@return the first quartile, the median and the third quartile of {@code f} over the rounds} */
    private static double[] quartiles(double[][] rounds, ToDoubleFunction<double[]> f) {
        double[] v = Arrays.stream(rounds).mapToDouble(f).sorted().toArray();
        return new double[] {v[v.length / 4], v[v.length / 2], v[(3 * v.length) / 4]};
    }

    /**
     * The floors of the two per-call targets, timed in this process after {@link #printPredict}:
     * <ul>
     *   <li>for the virtual thread's +5 µs: a virtual thread hands a task to a platform thread of
     *       its own and waits for its end ({@link HandOff}: a volatile slot each way, both sides
     *       looking before they park as the runtime's do, or parking at once), with no runtime around it; the
     *       task a no-op or a fixed amount of CPU work that takes as long as Python's call of the
     *       model, each over the same task run on a platform thread; and the best rounds of the
     *       model's call from Java with nothing around it, handed off so, from
     *       {@link #printPredict}'s rounds;</li>
     *   <li>for predict's 1.1x: what any call of a TorchScript model over a Java tensor must do
     *       besides the model, a torch tensor over the Java memory (torch's C Exchange API) and one
     *       output imported, in one GIL scope; and the model called from Java with only that around
     *       it (torch's inference-mode guard entered in Python, as the runtime does): each over
     *       Python's call; and predict over Python's call in CPU time of the calling thread (both
     *       run all their work on it), which the other processes of a loaded machine disturb less.</li>
     * </ul>
     *
     * @param predicted what {@link #printPredict} returned
     */
    private void printFloors(double[] predicted, ExchangeApi api, Runnable modelCall, HandOff spinning)
            throws Exception {
        double platform = predicted[0];
        double virtual = predicted[1];
        double python = predicted[2];
        double roundSeconds = model.equals("mlp") ? 0.3 : 1.5;
        long roundMillis = (long) (roundSeconds * 1e3);
        long steps = HandOff.stepsFor((long) python);
        double[] best = new double[6];
        Arrays.fill(best, Double.MAX_VALUE);
        double[] floor;
        double predictCpu = Double.MAX_VALUE;
        double pythonCpu = Double.MAX_VALUE;
        double floorCpu = Double.MAX_VALUE;
        try (PyObject output = handModel.call(bufferView); HandOff parking = new HandOff(false)) {
            Runnable noop = () -> { };
            Runnable busy = () -> HandOff.work(steps);
            // the model's call handed off is timed in printPredict's rounds already
            Runnable[] tasks = {noop, busy};
            for (int round = 0; round < 5; round++) {
                for (int k = 0; k < tasks.length; k++) {
                    Runnable task = tasks[k];
                    best[3 * k] = Math.min(best[3 * k], InFork.nanosPerCall(1, roundMillis, () -> {
                        task.run();
                        return null;
                    })[0]);
                    best[3 * k + 1] = Math.min(best[3 * k + 1], inVirtualThread(() -> spinning.call(task), roundMillis));
                    best[3 * k + 2] = Math.min(best[3 * k + 2], inVirtualThread(() -> parking.call(task), roundMillis));
                }
            }
            floor = InFork.nanosPerCall(5, roundMillis, () -> py.withGil(() -> {
                try (PyObject t = api.toPyObject(x); ManagedTensor out = PythonDlpack.fromDlpack(output)) {
                    return out.tensor().withData(s -> s.getAtIndex(ValueLayout.JAVA_FLOAT, 0));
                }
            }), () -> {
                modelCall.run();
                return null;
            });
            // CPU time of this thread per call, which another process's load on the cores disturbs less than wall time.
            for (int round = 0; round < 5; round++) {
                predictCpu = Math.min(predictCpu, cpuPerCall(this::predict, roundMillis));
                try (PyObject ns = pythonPerCall.call(roundSeconds, true)) {
                    pythonCpu = Math.min(pythonCpu, ns.asDouble());
                }
                floorCpu = Math.min(floorCpu, cpuPerCall(() -> {
                    modelCall.run();
                    return 0;
                }, roundMillis));
            }
        }
        System.out.printf("%n[in-fork] modelPredict %s floor of a virtual thread's hand-off to a platform thread and back"
                        + " (no runtime), over the same task on a platform thread: a no-op %+.1f us (parking at once %+.1f us);"
                        + " CPU work of %.1f us (as long as Python's call) %+.1f us (parking at once %+.1f us); the model's"
                        + " call from Java (tensor, call, import; %.1f us) %+.1f us; predict from a virtual thread in this"
                        + " fork %+.1f us%n",
                model, (best[1] - best[0]) / 1e3, (best[2] - best[0]) / 1e3, best[3] / 1e3, (best[4] - best[3]) / 1e3,
                (best[5] - best[3]) / 1e3, predicted[3] / 1e3, (predicted[4] - predicted[3]) / 1e3,
                (virtual - platform) / 1e3);
        System.out.printf("%n[in-fork] modelPredict %s floor of 1.1x: a torch tensor over the Java input and one output"
                        + " imported, no model, %.2f us = %.3f of Python's call; the model called from Java with only"
                        + " those around it %.1f us = %.3fx Python's call (%.1f us); predict in this fork %.3fx;"
                        + " in CPU time of the calling thread predict %.1f us, Python's call %.1f us (%.3fx), the model"
                        + " called from Java with only those around it %.1f us (%.3fx)%n",
                model, floor[0] / 1e3, floor[0] / python, floor[1] / 1e3, floor[1] / python, python / 1e3,
                platform / python, predictCpu / 1e3, pythonCpu / 1e3, predictCpu / pythonCpu, floorCpu / 1e3,
                floorCpu / pythonCpu);
    }

    /** {@return the ns of this thread's CPU time per call of {@code call}, run for {@code millis} of wall time} */
    private static double cpuPerCall(DoubleSupplier call, long millis) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long n = 0;
        long start = System.nanoTime();
        long cpuStart = threads.getCurrentThreadCpuTime();
        do {
            call.getAsDouble();
            n++;
        } while (System.nanoTime() - start < millis * 1_000_000L);
        return (double) (threads.getCurrentThreadCpuTime() - cpuStart) / n;
    }

    /** {@return the ns per call of {@code call}, run on a new virtual thread for {@code millis}} */
    private static double inVirtualThread(Runnable call, long millis) throws InterruptedException {
        AtomicReference<Double> ns = new AtomicReference<>();
        Thread.ofVirtual().start(() -> ns.set(InFork.nanosPerCall(1, millis, () -> {
            call.run();
            return null;
        })[0])).join();
        return ns.get();
    }

    /** {@return the ns per call of {@code call} run for {@code nanos} on this thread} */
    private static double perCall(DoubleSupplier call, long nanos) {
        long n = 0;
        long start = System.nanoTime();
        long elapsed;
        do {
            call.getAsDouble();
            n++;
            elapsed = System.nanoTime() - start;
        } while (elapsed < nanos);
        return (double) elapsed / n;
    }

    /** 64 virtual threads with one row each, for 2 s, with and without batching, two rounds in turns. */
    private void printThroughput() throws InterruptedException {
        Path file = dir.resolve(model + ".pt");
        try (PythonModel batched = PythonModel.builder().python(py).name(model + "-batched").torchScript(file)
                .input("x", DataType.FLOAT32, inputShape()).output("y", DataType.FLOAT32, -1, 16)
                .batching(64, Duration.ofMillis(1)).build()) {
            long[] best = {0, 0};
            long[] p99 = {0, 0};
            for (int round = 0; round < 2; round++) {
                PythonModel[] models = {unbatched, batched};
                for (int i = 0; i < 2; i++) {
                    long[] r = throughput(models[i], 64, Duration.ofSeconds(2));
                    if (r[0] > best[i]) {
                        best[i] = r[0];
                        p99[i] = r[1];
                    }
                }
            }
            System.out.printf("%n[in-fork] modelThroughput %s, 64 virtual threads: batching(64, 1 ms) %,d req/s"
                            + " (p99 %.2f ms), without %,d req/s (p99 %.2f ms) (%.2fx)%n",
                    model, best[1], p99[1] / 1e6, best[0], p99[0] / 1e6, (double) best[1] / best[0]);
        }
    }

    /** {@return requests/s and the p99 latency in ns of {@code threads} virtual threads calling for {@code length}} */
    private long[] throughput(PythonModel m, int threads, Duration length) throws InterruptedException {
        long until = System.nanoTime() + length.toNanos();
        List<long[]> latencies = new ArrayList<>();
        List<Integer> counts = new ArrayList<>();
        List<Thread> started = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long[] mine = new long[200_000];
            latencies.add(mine);
            int id = t;
            counts.add(0);
            started.add(Thread.ofVirtual().start(() -> {
                int n = 0;
                try (Tensor in = Tensor.of(random(shape), shape)) {
                    while (n < mine.length) {
                        long t0 = System.nanoTime();
                        if (t0 >= until) {
                            break;
                        }
                        m.predict(in).close();
                        mine[n++] = System.nanoTime() - t0;
                    }
                }
                synchronized (counts) {
                    counts.set(id, n);
                }
            }));
        }
        long start = System.nanoTime();
        for (Thread t : started) {
            t.join();
        }
        long elapsed = System.nanoTime() - start;
        int total = counts.stream().mapToInt(Integer::intValue).sum();
        long[] all = new long[total];
        int at = 0;
        for (int t = 0; t < threads; t++) {
            System.arraycopy(latencies.get(t), 0, all, at, counts.get(t));
            at += counts.get(t);
        }
        Arrays.sort(all);
        long p99 = all.length == 0 ? 0 : all[Math.min(all.length - 1, (int) (all.length * 0.99))];
        return new long[] {(long) (total / (elapsed / 1e9)), p99};
    }
}
