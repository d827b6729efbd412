package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;

import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

import org.junit.jupiter.api.Test;

class ThreadsTest {
    private static final String DOUBLER = """
            import numpy as np

            def make():
                return lambda x: np.from_dlpack(x) * 2
            """;

    private static PythonModel doubler() {
        return PythonModel.builder().python(Models.PY).source(DOUBLER, "make").workers(2).build();
    }

    /** 200 calls at once on {@code threads}: each gets the answer to its own input. */
    private static void eachGetsItsOwnAnswer(PythonModel model, ExecutorService threads) throws Exception {
        long answered = model.stats().answered();
        List<Future<Double>> answers = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            double v = i;
            answers.add(threads.submit(() -> {
                try (Tensor x = Tensor.of(new double[] {v}, 1);
                     Tensor y = model.predict(x)) {
                    return y.getDouble(0);
                }
            }));
        }
        for (int i = 0; i < answers.size(); i++) {
            assertThat(answers.get(i).get()).isEqualTo(2.0 * i);
        }
        assertThat(model.stats().answered()).isEqualTo(answered + 200);
    }

    @Test
    void platformThreadsEachGetTheirOwnAnswer() throws Exception {
        try (PythonModel model = doubler();
             ExecutorService threads = Executors.newFixedThreadPool(8)) {
            eachGetsItsOwnAnswer(model, threads);
        }
    }

    @Test
    void virtualThreadsEachGetTheirOwnAnswer() throws Exception {
        try (PythonModel model = doubler();
             ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            eachGetsItsOwnAnswer(model, threads);
        }
    }

    @Test
    void virtualThreadsWaitingForTheModelDoNotPinTheirCarriers() throws Exception {
        Path file = Models.file("pinned.jfr");
        try (PythonModel model = doubler();
             ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
             Recording recording = new Recording()) {
            // A first round initializes the classes a call needs: a virtual thread that waits for
            // another thread's class initialization is pinned, whatever the runtime does.
            eachGetsItsOwnAnswer(model, threads);
            recording.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
            recording.start();
            eachGetsItsOwnAnswer(model, threads);
            recording.stop();
            recording.dump(file);
        }
        List<RecordedEvent> pinned = RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().equals("jdk.VirtualThreadPinned")).toList();
        assertThat(pinned).as("pinned virtual threads").isEmpty();
    }

    @Test
    void tenThousandVirtualThreadsOnOneBatchedModelEachGetTheirOwnRowsAndCloseLeavesNothingBehind() throws Exception {
        Models.pythonModule("row_owner", """
                import weakref
                import torch

                live = {"models": 0, "inputs": 0, "outputs": 0}  # Python objects of the model not yet freed


                def _freed(kind):
                    live[kind] -= 1


                def _track(kind, obj):
                    live[kind] += 1
                    weakref.finalize(obj, _freed, kind)
                    return obj


                class Doubler:
                    def __init__(self):
                        live["models"] += 1

                    def __del__(self):
                        live["models"] -= 1

                    def __call__(self, x):
                        t = _track("inputs", torch.from_dlpack(x))
                        return _track("outputs", t * 2)


                def make():
                    return Doubler()


                def torch_tensors():
                    import gc
                    gc.collect()
                    return sum(1 for o in gc.get_objects() if issubclass(type(o), torch.Tensor))
                """);
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        long tensors = torchTensors();
        try (PythonModel model = PythonModel.builder().python(Models.PY).factory("row_owner", "make")
                .input("x", DataType.FLOAT64, -1, 2).batching(64, Duration.ofMillis(1)).maxQueue(10_000).build()) {
            try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<double[]>> answers = new ArrayList<>();
                for (int i = 0; i < 10_000; i++) {
                    double v = i;
                    answers.add(threads.submit(() -> {
                        try (Tensor x = Tensor.of(new double[] {v, -v - 0.5}, 1, 2);
                             Tensor y = model.predict(x)) {
                            return y.toDoubleArray();
                        }
                    }));
                }
                for (int i = 0; i < answers.size(); i++) {
                    assertThat(answers.get(i).get()).containsExactly(2.0 * i, -2.0 * i - 1);
                }
            }
            assertThat(model.stats().answered()).isEqualTo(10_000);
            assertThat(model.stats().largestBatchRows()).isGreaterThan(1);
        }
        // The outputs' deleters run once a thread takes the GIL (the condition's own evaluation
        // does): wait up to 5 s for them, then the assertion says what is left.
        Models.becomesTrue("sum(__import__('row_owner').live.values()) == 0");
        try (PyObject live = Models.PY.eval("__import__('gc').collect() * 0 or __import__('row_owner').live")) {
            assertThat(live.toJava()).as("the model and its inputs' and outputs' torch tensors freed")
                    .isEqualTo(Map.of("models", 0L, "inputs", 0L, "outputs", 0L));
        }
        assertThat(torchTensors()).as("torch tensors alive in Python").isLessThanOrEqualTo(tensors);
        Models.assertReleasedSince(exports, bytes);
    }

    private static long torchTensors() {
        try (PyObject n = Models.PY.eval("__import__('row_owner').torch_tensors()")) {
            return n.asLong();
        }
    }

    /**
     * A module {@code name} whose {@code make()} returns a model that sleeps {@code seconds} (letting
     * the GIL go, as torch's operators do) and returns its input, counting the calls that run at
     * once ({@code state["active"]}); {@code most()} is the most at once and the threads that ran them.
     */
    private static void sleeper(String name, double seconds) {
        Models.pythonModule(name, """
                import threading, time
                import numpy as np

                state = {"active": 0, "most": 0, "threads": set()}
                lock = threading.Lock()

                def make():
                    def run(x):
                        with lock:
                            state["active"] += 1
                            state["most"] = max(state["most"], state["active"])
                            state["threads"].add(threading.get_ident())
                        time.sleep(%s)
                        with lock:
                            state["active"] -= 1
                        return np.from_dlpack(x)
                    return run

                def most():
                    return state["most"], len(state["threads"])
                """.formatted(seconds));
    }

    @Test
    void atMostWorkersModelCallsRunAtOnceAndTheyOverlapOutsideTheGil() throws Exception {
        sleeper("sleeper", 0.05);
        try (PythonModel model = PythonModel.builder().python(Models.PY).factory("sleeper", "make")
                .workers(2).build();
             ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> calls = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                calls.add(threads.submit(() -> {
                    try (Tensor x = Tensor.of(new float[] {1}, 1)) {
                        model.predict(x).close();
                    }
                }));
            }
            for (Future<?> c : calls) {
                c.get();
            }
            try (PyObject most = Models.PY.eval("__import__('sleeper').most()")) {
                assertThat(most.toJava()).isEqualTo(List.of(2L, 2L));
            }
        }
    }

    private static final String IDENT = """
            import threading
            import numpy as np

            def make():
                return lambda x: np.array([threading.get_ident()], dtype=np.int64)
            """;

    /** {@return the Python thread identity of the calling platform thread} */
    private static long pythonIdent() {
        try (PyObject ident = Models.PY.eval("__import__('threading').get_ident()")) {
            return ident.asLong();
        }
    }

    private static long modelIdent(PythonModel model) {
        try (Tensor x = Tensor.of(new float[] {1}, 1); Tensor y = model.predict(x)) {
            return y.toLongArray()[0];
        }
    }

    @Test
    void withoutBatchingAPlatformCallerRunsTheModelOnItsOwnThreadWithOrWithoutADeadline() {
        try (PythonModel plain = PythonModel.builder().python(Models.PY).source(IDENT, "make").build();
             PythonModel deadline = PythonModel.builder().python(Models.PY).source(IDENT, "make")
                     .timeout(Duration.ofSeconds(30)).build()) {
            assertThat(modelIdent(plain)).isEqualTo(pythonIdent());
            assertThat(modelIdent(deadline)).isEqualTo(pythonIdent());
            assertThat(plain.stats().answered()).isEqualTo(1);
            assertThat(plain.stats().batches()).isEqualTo(1);
        }
    }

    @Test
    void aVirtualCallerOrABatchingModelIsAnsweredOnTheModelsOwnThread() throws Exception {
        long mine = pythonIdent();
        try (PythonModel plain = PythonModel.builder().python(Models.PY).source(IDENT, "make").build();
             PythonModel batching = PythonModel.builder().python(Models.PY).source(IDENT, "make")
                     .input("x", DataType.FLOAT32, -1).output("y", DataType.INT64, -1).batching(4, Duration.ZERO).build()) {
            long[] fromVirtual = new long[1];
            Thread.ofVirtual().start(() -> fromVirtual[0] = modelIdent(plain)).join();
            assertThat(fromVirtual[0]).isNotEqualTo(mine);
            assertThat(modelIdent(batching)).isNotEqualTo(mine);
        }
    }

    @Test
    void platformCallersRunningTheirOwnCallsShareTheWorkersLimitAndCloseWaitsForThem() throws Exception {
        sleeper("gate_here", 0.02);
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        PythonModel model = PythonModel.builder().python(Models.PY).factory("gate_here", "make").workers(2).build();
        AtomicInteger answered = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        try (ExecutorService threads = Executors.newFixedThreadPool(6)) {
            List<Future<?>> calls = new ArrayList<>();
            for (int i = 0; i < 60; i++) {
                float v = i;
                calls.add(threads.submit(() -> {
                    try (Tensor x = Tensor.of(new float[] {v}, 1)) {
                        try (Tensor y = model.predict(x)) {
                            assertThat(y.toFloatArray()).containsExactly(v);
                            answered.incrementAndGet();
                        }
                    } catch (IllegalStateException closed) {
                        refused.incrementAndGet();
                    }
                }));
                if (i == 30) {
                    model.close(); // waits for the calls running on their callers' threads
                    try (PyObject active = Models.PY.eval("__import__('gate_here').state['active']")) {
                        assertThat(active.asLong()).isZero();
                    }
                }
            }
            for (Future<?> c : calls) {
                c.get();
            }
        }
        assertThat(answered.get() + refused.get()).isEqualTo(60);
        assertThat(model.stats().answered()).isEqualTo(answered.get());
        try (PyObject most = Models.PY.eval("__import__('gate_here').most()[0]")) {
            assertThat(most.asLong()).isEqualTo(2);
        }
        Models.assertReleasedSince(exports, bytes);
    }

    @Test
    void everyThreadThatRunsATorchModelUsesTheIntraOpThreadCountItWasLoadedWith() throws Exception {
        Models.pythonModule("torch_threads", """
                import os
                import torch
                import numpy as np

                def make():
                    mlp = torch.jit.script(torch.nn.Sequential(
                        torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 16)))

                    def run(x):
                        # the threads a TorchScript model's parallel operators start on this thread
                        before = len(os.listdir("/proc/self/task"))
                        mlp(torch.ones(64, 256))
                        return np.array([len(os.listdir("/proc/self/task")) - before], dtype=np.int64)
                    return run
                """);
        long before;
        try (PyObject n = Models.PY.eval("__import__('torch').get_num_threads()")) {
            before = n.asLong();
        }
        Models.PY.exec("import torch\ntorch.set_num_threads(1)");
        try (PythonModel model = PythonModel.builder().python(Models.PY).factory("torch_threads", "make").build()) {
            long[] started = new long[2];
            Thread.ofPlatform().start(() -> started[0] = modelIdent(model)).join(); // on that thread itself
            Thread.ofVirtual().start(() -> started[1] = modelIdent(model)).join();  // on the model's thread
            // Another thread of the process may end meanwhile (-1); an OpenMP team would add one or more.
            assertThat(Math.max(started[0], started[1])).as("threads started by a matrix product with one intra-op "
                    + "thread, on the caller's thread and on the model's: " + Arrays.toString(started)).isLessThanOrEqualTo(0);
        } finally {
            Models.PY.exec("import torch\ntorch.set_num_threads(" + before + ")");
        }
    }
}
