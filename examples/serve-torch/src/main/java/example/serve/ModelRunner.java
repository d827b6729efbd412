package example.serve;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import io.github.dlpack4j.python.PythonException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The place where a request's Python work runs: every dlpack4j call of the service (the
 * interpreter, native tensors, DLPack both ways) is made here, on platform threads of its own.
 *
 * <p>A request handler (a virtual thread) hands its validated input to {@link #infer} and waits.
 * Each model has a queue and {@code runnerThreads} platform threads of its own: without batching,
 * each takes one request at a time; with batching, a thread takes the first request waiting,
 * gathers the ones that arrive within the batching window (or until every request in flight for
 * that model is in a batch), stacks their rows into one batch tensor, and runs the model once on
 * it, in one {@link Python#withGil} scope, then hands each request its rows of the output. torch
 * lets the GIL go inside its operators, so the threads' model calls overlap.
 *
 * <p>Each thread owns an input buffer per model, a native {@link Tensor} of {@code maxBatch} rows
 * that torch views through {@code torch.from_dlpack} (no copy), made when the thread starts; a
 * request's bytes are copied into its rows, and torch runs on a view of the rows in use. The output
 * is imported from torch with {@link PythonDlpack#fromDlpack} (no copy) and each request's rows are
 * copied from torch's memory into the bytes of its response. A batch with more rows than the buffer
 * gets a tensor of its own, freed before the batch ends.
 */
final class ModelRunner implements AutoCloseable {
    /** A model's one input and one output, as its v2 metadata shows them; -1: any extent. */
    record TensorSpec(String name, String datatype, long[] shape) {
        /** {@return the elements of one row: the product of the extents after the first} */
        long rowElements() {
            long n = 1;
            for (int i = 1; i < shape.length; i++) {
                n *= shape[i];
            }
            return n;
        }
    }

    /** A served model: its name, input and output. */
    record ModelSpec(String name, TensorSpec input, TensorSpec output) {}

    /** What a request asks of a model: {@code rows} rows of input, as floats (JSON) or raw bytes. */
    record Work(long[] shape, float[] values, byte[] bytes, int offset) {
        long rows() {
            return shape[0];
        }
    }

    /** A model's answer to one request: the output's shape and its values, row-major. */
    record Result(long[] shape, float[] values) {}

    /** The model raised: the Python exception's type and message. */
    static final class ModelException extends RuntimeException {
        ModelException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** Counters for the admin endpoint: the process's dlpack4j state and the runner's work. */
    record Stats(int liveExports, long nativeBytes, long requests, long batches, long modelErrors,
                 long batchedRows, int largestBatch) {}

    private record Job(Work work, CompletableFuture<Result> done) {}

    private final Python py;
    private final ServeOptions options;
    private final Map<String, Model> models = new LinkedHashMap<>();
    private final List<Thread> threads = new ArrayList<>();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong batches = new AtomicLong();
    private final AtomicLong modelErrors = new AtomicLong();
    private final AtomicLong batchedRows = new AtomicLong();
    private final AtomicInteger largestBatch = new AtomicInteger();
    private volatile boolean closed;

    private final class Model {
        final ModelSpec spec;
        final PyObject run;
        final BlockingQueue<Job> queue = new LinkedBlockingQueue<>();
        /** Requests handed to {@link #infer} and not answered yet. */
        final AtomicInteger waiting = new AtomicInteger();
        /** Requests between {@link #arrive} and their answer: those on their way to the queue too. */
        final AtomicInteger inFlight = new AtomicInteger();
        /** Requests taken from the queue into a batch (being gathered or run) by any thread. */
        final AtomicInteger claimed = new AtomicInteger();

        Model(ModelSpec spec, PyObject run) {
            this.spec = spec;
            this.run = run;
        }
    }

    private ModelRunner(ServeOptions options) {
        this.options = options;
        this.py = Python.start();
    }

    /**
     * Starts the interpreter, builds each model of {@code options} and its threads, and returns once
     * every thread has made its buffers.
     *
     * @param options the service's settings
     * @return the runner, ready for requests
     * @throws PythonException if Python cannot build a model
     */
    static ModelRunner start(ServeOptions options) {
        ModelRunner r = new ModelRunner(options);
        try {
            r.load();
        } catch (RuntimeException e) {
            r.close();
            throw e;
        }
        return r;
    }

    private void load() {
        py.withGil(() -> {
            try (PyObject loaded = py.eval("'serve_models' in __import__('sys').modules")) {
                if (!loaded.asBoolean()) {   // once per process: other runners in this JVM share it
                    exec(resource("serve_models.py"), "serve_models");
                }
            }
            py.exec("import torch, serve_models\ntorch.set_num_threads(" + options.torchThreads() + ")");
        });
        CountDownLatch ready = new CountDownLatch(options.models().stream().mapToInt(options::runnerThreads).sum());
        List<Throwable> failures = new ArrayList<>();
        for (String name : options.models()) {
            Model m = py.withGil(() -> build(name));
            models.put(name, m);
            for (int i = 0; i < options.runnerThreads(name); i++) {
                Thread t = Thread.ofPlatform().name("model-" + name + "-" + i).daemon(false).unstarted(
                        () -> loop(m, ready, failures));
                threads.add(t);
                t.start();
            }
        }
        try {
            if (!ready.await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the model threads did not start within 120 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the model threads started", e);
        }
        synchronized (failures) {
            if (!failures.isEmpty()) {
                throw new IllegalStateException("a model thread failed to start", failures.getFirst());
            }
        }
    }

    /** Runs {@code source} as the module {@code name} (the models' code, a resource of this jar). */
    private void exec(String source, String name) {
        try (PyObject types = py.importModule("types");
             PyObject module = types.callMethod("ModuleType", name);
             PyObject sys = py.importModule("sys");
             PyObject modules = sys.attr("modules");
             PyObject builtins = py.importModule("builtins");
             PyObject dict = module.attr("__dict__")) {
            modules.callMethod("__setitem__", name, module);
            builtins.callMethod("exec", builtins.callMethod("compile", source, name + ".py", "exec"), dict).close();
        }
    }

    private static String resource(String name) {
        try (InputStream in = ModelRunner.class.getClassLoader().getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("resource " + name + " is missing from the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private Model build(String name) {
        try (PyObject serveModels = py.importModule("serve_models");
             PyObject specs = serveModels.attr("SPECS");
             PyObject spec = specs.get(name);
             PyObject model = serveModels.callMethod("build", name, options.weights() == null ? null
                     : options.weights().toString())) {
            ModelSpec s = new ModelSpec(name, tensorSpec(spec, "input"), tensorSpec(spec, "output"));
            return new Model(s, serveModels.callMethod("runner", model));
        }
    }

    private static TensorSpec tensorSpec(PyObject model, String which) {
        try (PyObject t = model.attr(which);
             PyObject n = t.attr("name");
             PyObject d = t.attr("datatype");
             PyObject shape = t.attr("shape");
             PyObject len = shape.callMethod("__len__")) {
            long[] s = new long[(int) len.asLong()];
            for (int i = 0; i < s.length; i++) {
                try (PyObject e = shape.get(i)) {
                    s[i] = e.asLong();
                }
            }
            return new TensorSpec(n.str(), d.str(), s);
        }
    }

    /** {@return the specs of the models served, in the order they were given} */
    List<ModelSpec> specs() {
        return models.values().stream().map(m -> m.spec).toList();
    }

    /**
     * Runs model {@code name} on one request's input and waits for its output.
     *
     * @param name the model, one of {@link #specs()}
     * @param work the input, already checked against the model's spec
     * @return the output's shape and bytes
     * @throws ModelException if the model raised (the message names the Python type and text)
     * @throws IllegalStateException if the runner is closed
     */
    Result infer(String name, Work work) throws InterruptedException {
        Model m = models.get(name);
        if (m == null) {
            throw new IllegalArgumentException("no model " + name);
        }
        if (closed) {
            throw new IllegalStateException("the model runner is closed");
        }
        Job job = new Job(work, new CompletableFuture<>());
        requests.incrementAndGet();
        m.waiting.incrementAndGet();
        m.queue.add(job);
        try {
            return job.done.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(e.getCause());
        }
    }

    /**
     * Counts a request for model {@code name} as on its way: called when its handler starts, before
     * the body is read, so that batching waits for it (within the window). Balance it with
     * {@link #leave}.
     */
    void arrive(String name) {
        models.get(name).inFlight.incrementAndGet();
    }

    /** The request counted by {@link #arrive} has its answer, or will not ask the model. */
    void leave(String name) {
        models.get(name).inFlight.decrementAndGet();
    }

    /** {@return whether {@code name} is a model served here} */
    boolean serves(String name) {
        return models.containsKey(name);
    }

    private int maxBatch(Model m) {
        return options.maxBatch(m.spec.name());
    }

    /** {@return the counters of the admin endpoint} */
    Stats stats() {
        return new Stats(Dlpack.liveExports(), Dlpack.nativeBytesInUse(), requests.get(), batches.get(),
                modelErrors.get(), batchedRows.get(), largestBatch.get());
    }

    /** The requests' rows, one after the other, into {@code in} (no GIL needed). */
    private static Void copyRows(List<Job> batch, long rowBytes, MemorySegment in) {
        long at = 0;
        for (Job j : batch) {
            Work w = j.work;
            long n = w.rows() * rowBytes;
            if (w.values() != null) {
                MemorySegment.copy(w.values(), 0, in, ValueLayout.JAVA_FLOAT_UNALIGNED, at, (int) (n / Float.BYTES));
            } else {
                MemorySegment.copy(w.bytes(), w.offset(), in, ValueLayout.JAVA_BYTE, at, (int) n);
            }
            at += n;
        }
        return null;
    }

    /** The input buffer of one thread for one model: a native tensor torch views, and views of its first rows. */
    private final class Lane implements AutoCloseable {
        final Tensor buffer;
        final MemorySegment data;
        final PyObject shared;
        final PyObject full;
        final PyObject[] rowViews;
        final long rowBytes;

        Lane(Model m) {
            long[] shape = m.spec.input().shape().clone();
            shape[0] = maxBatch(m);
            buffer = Tensor.zeros(DataType.FLOAT32, shape);
            data = buffer.data();
            rowBytes = m.spec.input().rowElements() * Float.BYTES;
            rowViews = new PyObject[maxBatch(m) + 1];
            shared = PythonDlpack.toPython(buffer);
            try (PyObject torch = py.importModule("torch")) {
                full = torch.callMethod("from_dlpack", shared);
            }
        }

        /** {@return torch's view of the first {@code rows} rows (made once per row count)} */
        PyObject rows(int rows) {
            PyObject v = rowViews[rows];
            if (v == null) {
                v = full.callMethod("narrow", 0, 0, rows);
                rowViews[rows] = v;
            }
            return v;
        }

        @Override
        public void close() {
            for (PyObject v : rowViews) {
                if (v != null) {
                    v.close();
                }
            }
            full.close();
            shared.close();
            buffer.close();
        }
    }

    private void loop(Model m, CountDownLatch ready, List<Throwable> failures) {
        Lane lane;
        try {
            lane = py.withGil(() -> new Lane(m));
        } catch (Throwable t) {
            synchronized (failures) {
                failures.add(t);
            }
            ready.countDown();
            return;
        }
        ready.countDown();
        List<Job> batch = new ArrayList<>();
        Job carried = null;   // taken while gathering, too big for that batch: it starts the next one
        try {
            while (!closed) {
                Job first = carried != null ? carried : m.queue.poll(100, TimeUnit.MILLISECONDS);
                carried = null;
                if (first == null) {
                    continue;
                }
                batch.add(first);
                m.claimed.incrementAndGet();
                if (options.batching()) {
                    carried = gather(m, batch);
                }
                try {
                    run(m, lane, batch);
                } finally {
                    m.claimed.addAndGet(-batch.size());
                    batch.clear();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            if (carried != null) {
                batch.add(carried);
            }
            fail(m, batch, new IllegalStateException("the model runner stopped"));
            py.withGil(lane::close);
        }
    }

    /**
     * Adds to {@code batch} the requests that wait or arrive within the batching window, up to
     * {@code maxBatch} rows; stops early once every request in flight for the model is in it.
     *
     * @return a request taken that did not fit, for the next batch; or null
     */
    private Job gather(Model m, List<Job> batch) throws InterruptedException {
        long rows = batch.getFirst().work.rows();
        long deadline = System.nanoTime() + options.batchWindowMicros() * 1000L;
        while (rows < maxBatch(m)) {
            Job next = m.queue.poll();
            if (next == null) {
                long left = deadline - System.nanoTime();
                if (left <= 0 || m.claimed.get() >= m.inFlight.get()) {
                    return null;   // the window is over, or every request in flight is in a batch already
                }
                next = m.queue.poll(Math.min(left, 50_000L), TimeUnit.NANOSECONDS);
                if (next == null) {
                    continue;
                }
            }
            m.claimed.incrementAndGet();
            if (rows + next.work.rows() > maxBatch(m)) {
                m.claimed.decrementAndGet();   // claimed again when the next batch takes it
                return next;
            }
            batch.add(next);
            rows += next.work.rows();
        }
        return null;
    }

    /** Runs the model once on the rows of every request of {@code batch}, and answers each. */
    private void run(Model m, Lane lane, List<Job> batch) {
        long rows = 0;
        for (Job j : batch) {
            rows += j.work.rows();
        }
        batches.incrementAndGet();
        batchedRows.addAndGet(rows);
        largestBatch.accumulateAndGet(batch.size(), Math::max);
        TensorSpec out = m.spec.output();
        float[][] outputs = new float[batch.size()][];
        Tensor own = null;
        try {
            if (rows <= lane.rowViews.length - 1) {
                copyRows(batch, lane.rowBytes, lane.data);
            } else {
                long[] shape = m.spec.input().shape().clone();
                shape[0] = rows;
                own = Tensor.zeros(DataType.FLOAT32, shape);
                own.withData(in -> copyRows(batch, lane.rowBytes, in));
            }
            long total = rows;
            Tensor ownInput = own;
            py.withGil(() -> {   // one scope: the model call, its output's import, the copies out
                PyObject shared = null;
                PyObject x = null;
                try {
                    if (ownInput == null) {
                        x = lane.rows((int) total);
                    } else {
                        shared = PythonDlpack.toPython(ownInput);
                        try (PyObject torch = py.importModule("torch")) {
                            x = torch.callMethod("from_dlpack", shared);
                        }
                    }
                    try (PyObject y = m.run.call(x);
                         ManagedTensor result = PythonDlpack.fromDlpack(y)) {
                        Tensor t = result.tensor();
                        long[] shape = t.shape();
                        if (shape.length != out.shape().length || shape[0] != total
                                || t.numel() != total * out.rowElements()) {
                            throw new ModelException("the model's output has shape " + Arrays.toString(shape)
                                    + ", not [" + total + ", ...] of " + out.rowElements() + " per row", null);
                        }
                        // torch's memory read in place into the answers: each request's rows copied out
                        // with one bulk copy, straight from torch's memory
                        long from = 0;
                        for (int i = 0; i < outputs.length; i++) {
                            long n = batch.get(i).work.rows();
                            outputs[i] = outputs.length == 1 ? t.toFloatArray() : t.slice(0, from, from + n, 1).toFloatArray();
                            from += n;
                        }
                    }
                } finally {
                    if (ownInput != null) {
                        if (x != null) {
                            x.close();
                        }
                        if (shared != null) {
                            shared.close();
                        }
                    }
                }
            });
        } catch (PythonException e) {
            modelErrors.incrementAndGet();
            fail(m, batch, new ModelException("the model raised " + e.pythonType() + ": " + e.pythonMessage(), e));
            return;
        } catch (RuntimeException e) {
            modelErrors.incrementAndGet();
            fail(m, batch, e instanceof ModelException ? e : new ModelException("the model failed: " + e, e));
            return;
        } finally {
            if (own != null) {
                own.close();
            }
        }
        for (int i = 0; i < outputs.length; i++) {
            Job j = batch.get(i);
            long[] shape = out.shape().clone();
            shape[0] = j.work.rows();
            m.waiting.decrementAndGet();
            j.done.complete(new Result(shape, outputs[i]));
        }
    }

    private static void fail(Model m, List<Job> batch, RuntimeException e) {
        for (Job j : batch) {
            m.waiting.decrementAndGet();
            j.done.completeExceptionally(e);
        }
    }

    /** Stops the threads (each frees its buffers) and waits for them; requests still queued fail. */
    @Override
    public void close() {
        closed = true;
        for (Thread t : threads) {
            try {
                t.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        for (Model m : models.values()) {
            Job j;
            while ((j = m.queue.poll()) != null) {
                j.done.completeExceptionally(new IllegalStateException("the model runner is closed"));
            }
            py.withGil(m.run::close);
        }
    }
}
