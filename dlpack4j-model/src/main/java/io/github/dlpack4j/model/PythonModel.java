package io.github.dlpack4j.model;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonException;

/**
 * A Python model loaded once into the embedded interpreter and called from any thread: a TorchScript
 * file, an exported program, or any Python callable, with declared inputs and outputs checked in
 * Java, optional dynamic batching, a bounded queue, deadlines, per-request failure isolation,
 * {@linkplain #stats() stats} and JDK Flight Recorder events.
 *
 * {@snippet :
 * try (PythonModel model = PythonModel.builder()
 *         .torchScript(Path.of("mlp.pt"))
 *         .input("x", DataType.FLOAT32, -1, 256)
 *         .output("y", DataType.FLOAT32, -1, 16)
 *         .batching(64, Duration.ofMillis(1))
 *         .build();
 *      Tensor x = Tensor.zeros(DataType.FLOAT32, 1, 256);
 *      Tensor y = model.predict(x)) {
 *     float[] scores = y.toFloatArray();
 * }
 * }
 *
 * <p><b>The calling convention.</b> The model's callable gets the inputs in declared order (without
 * declared inputs, in the order of the map given to {@link #predict(Map)}) and returns one tensor, a
 * tuple or list of them in declared order, or a dict of them by output name; any object with
 * {@code __dlpack__} is a tensor (torch, NumPy, JAX). For {@link Builder#torchScript} and
 * {@link Builder#exportedProgram} the inputs are torch tensors over the caller's (or the batch's)
 * memory; for {@link Builder#factory} and {@link Builder#source} they are dlpack4j's Python tensor
 * objects, which any DLPack consumer views without a copy ({@code torch.from_dlpack},
 * {@code np.from_dlpack}), or torch tensors with {@link Builder#torchInputs()}. When loading the model imported torch, it runs under
 * {@code torch.inference_mode()}. Without declared outputs, a single result is named {@code output},
 * a tuple's items {@code output0}, {@code output1}, ..., and a dict keeps its keys.
 *
 * <p><b>Memory.</b> Without batching the model reads the caller's memory (torch's {@code data_ptr()}
 * is the Java tensor's address). With batching, requests are copied once into a batch buffer the
 * runtime reuses; a request alone in its batch runs on its own memory. Outputs are the model's own
 * memory, imported through DLPack; with batching each request gets a view of its own rows, and the
 * batch's memory is released when the last of them is closed. The caller owns the tensors that
 * {@code predict} returns and closes them; they stay readable after the model is closed.
 *
 * <p><b>Threads.</b> {@code predict} and {@code submit} may be called from any thread, platform or
 * virtual: the model runs on {@link Builder#workers} platform threads of its own (named
 * {@code dlpack4j-model-NAME-N}), each holding the GIL only while Python runs, and a caller only
 * waits (a virtual thread parks without pinning its carrier, and never runs Python itself). A
 * model without batching lets a platform caller run its call on its own thread when nothing waits
 * in the queue and fewer than {@code workers} calls run: no hand-off to a model thread and back, no
 * look and no park, so such a call costs the same every time. At most {@code workers} model calls
 * run at once either way. A call on the caller's own thread cannot be given up at its deadline
 * (nothing else could account for the model call it runs): it runs to its end, and if the deadline
 * passed meanwhile its outputs are let go and it fails with the same {@link ModelTimeoutException}
 * a queued call gets, as late as the model call took.
 *
 * <p><b>Failures.</b> A call whose inputs break the declared signature is an
 * {@link IllegalArgumentException} before Python runs; an output that breaks it fails that call with
 * an {@link IllegalStateException} naming the output; the model's own error is a
 * {@link PythonException}. A batch whose model call fails is run again request by request, so only a
 * request that fails alone fails. A full queue refuses a call at once with
 * {@link ModelOverloadedException}; a passed deadline is a {@link ModelTimeoutException}; a call
 * after {@link #close()} is an {@link IllegalStateException}.
 */
public final class PythonModel implements AutoCloseable {
    /** How long {@link #close()} waits for the admitted requests when no per-call deadline bounds them. */
    private static final Duration CLOSE_WAIT = Duration.ofSeconds(30);

    private final String name;
    private final Python python;
    private final Signature signature;
    private final Scheduler scheduler;
    private final Recorder recorder;
    private final Duration timeout;
    private final List<Thread> workers = new ArrayList<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    /**
     * The callers' look for their answers ({@link #lookForAnswer}); it gives up after 16 misses in a
     * row, not 4: a quick model's calls are slow in clusters now and then on a busy machine (a
     * virtual thread in a loop of mlp calls skipped a third of its looks with 4).
     */
    private final Look answers = new Look(16);
    private final ModelCall call;
    /** One permit per model call that may run at once ({@link Builder#workers}): a worker or a caller's own call takes one. */
    private final Semaphore slots;
    private final int workerCount;
    /** Whether a platform caller may run its call on its own thread: no batching. */
    private final boolean callsHere;
    /**
     * Per platform thread, how many of this model's calls without batching run on it now (a
     * caller's own, {@link #callHere}, or a worker's): a call made from inside one (the model called
     * back into Java, which calls the model again) runs there too, on the outer call's slot, as the
     * thread could not wait for itself.
     */
    private final ThreadLocal<int[]> callingHere = ThreadLocal.withInitial(() -> new int[1]);
    /** The workers still running and the callers' own calls in flight; the last one out closes {@link #call}. */
    private final AtomicInteger users;
    /** The model's streams ({@link #stream}) and their threads. */
    private final Streams streams;

    private PythonModel(Builder b, String name, ModelCall call) {
        this.name = name;
        this.python = b.python;
        this.timeout = b.timeout;
        this.call = call;
        this.signature = new Signature(name, b.inputs, b.outputs, b.maxBatchRows > 0);
        this.recorder = new Recorder(name, b.listener);
        this.scheduler = new Scheduler(name, recorder, b.maxQueue, b.maxBatchRows, b.maxDelay.toNanos(),
                b.timeout == null ? 0 : b.timeout.toNanos());
        this.slots = new Semaphore(b.workers);
        this.workerCount = b.workers;
        this.callsHere = b.maxBatchRows == 0;
        this.users = new AtomicInteger(b.workers);
        this.streams = new Streams(name, call, recorder, slots, b.workers, b.maxQueue + b.workers,
                b.timeout == null ? 0 : b.timeout.toNanos(), b.streamTimeout == null ? 0 : b.streamTimeout.toNanos(),
                this::enter, this::leave);
        for (int i = 0; i < b.workers; i++) {
            Worker w = new Worker(scheduler, call, signature, recorder, b.maxBatchRows, slots, callingHere, this::leave);
            workers.add(Thread.ofPlatform().name("dlpack4j-model-" + name + "-" + i).daemon(true).start(w));
        }
    }

    /** A thread that ran the model (a worker, or a caller's own call) is done: the last one lets go of the model. */
    private void leave() {
        if (users.decrementAndGet() == 0) {
            call.close();
        }
    }

    /** {@return a builder: give it one source of the model, and the settings that differ from the defaults} */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Runs the model on one input and returns its one output.
     *
     * @param input the input tensor
     * @return the output, owned by the caller, who closes it
     * @throws IllegalArgumentException  if the model has several inputs or outputs, or {@code input}
     *                                   breaks the declared signature
     * @throws IllegalStateException     if the model is closed, or its output breaks the declared signature
     * @throws ModelOverloadedException  if the queue is full
     * @throws ModelTimeoutException     if the deadline passed
     * @throws PythonException           if the model raised
     */
    public Tensor predict(Tensor input) {
        List<Signature.Port> in = signature.inputPorts();
        if (in.size() > 1 || signature.outputPorts().size() > 1) {
            throw new IllegalArgumentException("model " + name + " has inputs " + names(in) + " and outputs "
                    + names(signature.outputPorts()) + "; predict(Tensor) is for one input and one output: use predict(Map)");
        }
        Map<String, Tensor> out = predict(Map.of(in.isEmpty() ? "input" : in.getFirst().name(), input));
        if (out.size() != 1) {
            out.values().forEach(Tensor::close);
            throw new IllegalArgumentException("model " + name + " returned outputs " + out.keySet()
                    + "; predict(Tensor) is for one output: use predict(Map)");
        }
        return out.values().iterator().next();
    }

    private static List<String> names(List<Signature.Port> ports) {
        return ports.stream().map(Signature.Port::name).toList();
    }

    /**
     * Runs the model on named inputs and waits for its outputs. An interrupt while waiting gives the
     * request up (dropped if its model call has not started; a call already running finishes and its
     * outputs are let go) and throws {@link CancellationException} with the thread's interrupt status
     * set; a call running on the caller's own thread is not interrupted, and returns its answer with
     * the status set; an interrupt that comes once the request has its answer (or its
     * error) returns it (or throws it), with the interrupt status set. A caller inside a GIL scope
     * ({@link Python#withGil}) lets the GIL go while it waits, as the model's threads need it.
     * Calling it on one of the model's own threads (in a callback of a future that
     * {@link #submit} returned) would wait for that thread itself: it throws
     * {@link IllegalStateException}.
     *
     * @param inputs the inputs by name (without declared inputs, in the order the model takes them)
     * @return the outputs by name, in the model's order; owned by the caller, who closes them
     * @throws IllegalArgumentException  if the inputs break the declared signature
     * @throws IllegalStateException     if the model is closed, or an output breaks the declared
     *                                   signature, or it is called on one of the model's own threads
     * @throws ModelOverloadedException  if the queue is full
     * @throws ModelTimeoutException     if the deadline passed, waiting or running: the caller waits no
     *                                   longer, while a model call already running finishes (its outputs
     *                                   are then let go); a call running on the caller's own thread
     *                                   fails so once it is over (see the class comment)
     * @throws PythonException           if the model raised
     */
    public Map<String, Tensor> predict(Map<String, ? extends Tensor> inputs) {
        tensorsOnly("predict");
        return call(inputs, ModelResult::takeTensors);
    }

    /**
     * Runs the model on named inputs of any kind and waits for all its outputs: tensors, texts and
     * values. It waits, gives up at an interrupt and fails as {@link #predict(Map)} does.
     *
     * {@snippet :
     * String code = """
     *         def make():
     *             return lambda texts: {"upper": [t.upper() for t in texts], "length": [len(t) for t in texts]}
     *         """;
     * try (PythonModel model = PythonModel.builder()
     *         .source(code, "make")
     *         .textInput("text")
     *         .textOutput("upper")
     *         .valueOutput("length")
     *         .batching(32, Duration.ofMillis(2))
     *         .build();
     *      ModelResult r = model.run(Map.of("text", List.of("a cat", "a kitten")))) {
     *     List<String> upper = r.texts("upper");     // ["A CAT", "A KITTEN"]
     *     List<Object> lengths = r.values("length");  // [5L, 8L]: one value a row
     * }
     * }
     *
     * @param inputs the inputs by name: a {@link Tensor} for a tensor input; a {@code String} (one
     *               row) or a non-empty {@code List<String>} (a string a row) for a text input
     * @return the outputs, owned by the caller, who closes the result (it closes its tensors)
     * @throws IllegalArgumentException  if the inputs break the declared signature: a tensor for a
     *                                   text input or text for a tensor input, an empty list, a null
     *                                   string, a string with a lone surrogate, rows that differ
     *                                   with batching
     * @throws IllegalStateException     if the model is closed, or an output breaks the declared
     *                                   signature (a text or value output with another number of rows
     *                                   than the call's, or an item of a type it cannot carry)
     * @throws ModelOverloadedException  if the queue is full
     * @throws ModelTimeoutException     if the deadline passed
     * @throws PythonException           if the model raised
     */
    public ModelResult run(Map<String, ?> inputs) {
        return call(inputs, Function.identity());
    }

    /**
     * Queues a call of inputs of any kind ({@link #run(Map)}) and returns at once, as {@link #submit} does.
     *
     * @param inputs the inputs by name: tensors, strings and lists of strings
     * @return the outputs, owned by whoever takes them from the future and closes them
     * @throws IllegalArgumentException if the inputs break the declared signature
     * @throws IllegalStateException    if the model is closed
     * @throws ModelOverloadedException if the queue is full
     */
    public CompletableFuture<ModelResult> runAsync(Map<String, ?> inputs) {
        return admit(inputs, Function.identity());
    }

    /**
     * Streams the items of a generator model: the model's callable, called on the inputs as
     * {@link #run} calls it, returns a Python generator (or any iterable), and each item it yields
     * becomes one {@link ModelResult}, in order. An item is a dict by output name (a declared output
     * may be left out of an item), a tuple of the declared outputs in order, or one output: a lone
     * {@code str} is the first declared text output. In an item a text output is one string (one
     * row: {@link ModelResult#text}), a value output one JSON-like value ({@link ModelResult#value}),
     * a tensor output any object with {@code __dlpack__}; without declared outputs an item's
     * {@code str} is a text output and anything else without {@code __dlpack__} a value. The stream
     * completes when the generator ends and fails with the {@link PythonException} it raises.
     *
     * {@snippet :
     * String code = """
     *         def make():
     *             def count(text):
     *                 for i, word in enumerate(text[0].split()):
     *                     yield {"token": word, "index": i}
     *             return count
     *         """;
     * try (PythonModel model = PythonModel.builder().source(code, "make")
     *         .textInput("text").textOutput("token").valueOutput("index").build()) {
     *     model.stream(Map.of("text", "one two three")).subscribe(new Flow.Subscriber<>() {
     *         public void onSubscribe(Flow.Subscription s) { s.request(Long.MAX_VALUE); }
     *         public void onNext(ModelResult item) { System.out.println(item.text("token")); item.close(); }
     *         public void onError(Throwable e) { e.printStackTrace(); }
     *         public void onComplete() { System.out.println("done"); }
     *     });
     * }
     * }
     *
     * <p><b>Back-pressure.</b> The generator advances only while the subscriber has demand: one
     * item per {@code request}ed item, with no read-ahead, so a subscriber that requests one item at
     * a time has the generator run to its next {@code yield} only then. <b>Cancellation</b> closes
     * the generator (Python raises {@code GeneratorExit} at its {@code yield}, its {@code finally}
     * runs) as soon as the item being made, if any, is done, and frees its place. Once
     * {@code cancel} returns, the subscriber gets no further signal: items made before it and not
     * yet handed to {@code onNext} are closed, not delivered (a cancel from inside {@code onNext} is
     * the last thing that subscriber hears, even if the stream had completed meanwhile); after one
     * from another thread, a signal the subscriber's thread was already starting may still begin.
     *
     * <p><b>Threads.</b> The model's {@link Builder#workers} stream threads advance the generators,
     * one item per step, taking turns over every stream with demand: any number of streams
     * interleave, one item at a time each, and at most {@code workers} model calls run at once,
     * streams' steps and other calls together. The subscriber's signals run in order, one at a time,
     * on virtual threads, never on a stream thread: a subscriber that blocks holds up only its own
     * stream. The subscriber owns each item and closes it (its tensors).
     *
     * <p><b>Limits.</b> {@link Builder#timeout} bounds the time from the subscription to the first
     * item, {@link Builder#streamTimeout} the whole stream; past either the stream fails with
     * {@link ModelTimeoutException} and its generator is closed (a step already running finishes
     * first). At most {@code maxQueue} plus {@code workers} streams are open at once: past that a
     * subscription fails with {@link ModelOverloadedException}. {@link #close()} waits for running
     * streams up to its deadline, then fails them with {@link IllegalStateException} and closes their
     * generators. The publisher is cold and takes one subscriber: the stream starts at the
     * subscription (keep tensor inputs open until then); a second subscriber gets
     * {@link IllegalStateException} in {@code onError}. Stats count a stream as one request (answered,
     * failed or timed out only if its subscriber heard so before it cancelled), the items handed to
     * its {@code onNext} in {@link ModelStats#streamItems()}, and its first item's latency; JFR
     * records an {@code io.github.dlpack4j.model.Stream} event per stream.
     *
     * @param inputs the inputs by name, as for {@link #run}
     * @return the stream's publisher
     * @throws IllegalArgumentException if the inputs break the declared signature (before Python runs)
     * @throws IllegalStateException    if the model is closed
     */
    public Flow.Publisher<ModelResult> stream(Map<String, ?> inputs) {
        Objects.requireNonNull(inputs, "inputs");
        if (closed.get()) {
            throw new IllegalStateException("model " + name + " is closed");
        }
        List<Object> ordered = signature.order(inputs);
        AtomicBoolean subscribed = new AtomicBoolean();
        return subscriber -> {
            Objects.requireNonNull(subscriber, "subscriber");
            if (!subscribed.compareAndSet(false, true)) {
                Streams.refuse(subscriber, new IllegalStateException("model " + name
                        + ": a stream takes one subscriber, and this one has its subscriber already"));
                return;
            }
            List<Object> held;
            try {
                held = hold(ordered);
            } catch (RuntimeException e) {
                Streams.refuse(subscriber, e);
                return;
            }
            streams.open(held, subscriber);
        };
    }

    /** Refuses {@code predict} and {@code submit} on a model with text or value outputs: they return tensors. */
    private void tensorsOnly(String method) {
        if (signature.hasListOutputs()) {
            throw new IllegalArgumentException("model " + name + " has text or value outputs " + signature.outputPorts()
                    + "; " + method + " returns tensors only: use run or runAsync");
        }
    }

    private <A> A call(Map<String, ?> inputs, Function<ModelResult, A> shape) {
        int[] depth = callsHere && !Thread.currentThread().isVirtual() ? callingHere.get() : null;
        if (depth != null && depth[0] > 0) {
            // called back from inside its own call on this thread (a caller's or a model thread's):
            // that call's slot is this one's
            return shape.apply(callHere(inputs, depth));
        }
        if (onModelThread()) {
            throw new IllegalStateException("model " + name + ": predict on the model's own thread "
                    + Thread.currentThread().getName() + " (in a callback of a future of submit) would wait for "
                    + "that thread itself; call submit there, or move the callback off it with the ...Async forms");
        }
        if (depth != null) {
            if (scheduler.nothingQueued() && !slots.hasQueuedThreads() && slots.tryAcquire()) {
                try { // a worker waiting for a slot went first
                    return shape.apply(callHere(inputs, depth));
                } finally {
                    slots.release();
                }
            }
        }
        Request<A> r = admit(inputs, shape);
        // Alone in flight, its call runs at once.
        boolean alone = !scheduler.batching() && scheduler.inFlight() == 1;
        List<A> answer = new ArrayList<>(1);
        // A caller inside a GIL scope lets it go: the workers need it to answer.
        python.allowThreads(() -> {
            if (alone) {
                lookForAnswer(r);
            }
            answer.add(await(r));
        });
        return answer.getFirst();
    }

    /**
     * The call run on the caller's own platform thread, holding one of the {@link #slots}: no
     * hand-off to a worker and back, when nothing waits in the queue and a slot is free. It is
     * counted as a queued call is, with no queue wait. A deadline that passed while it ran fails it
     * once the model call is over, as {@link Request#timeOut} fails a queued call whose model call
     * ran past it (its outputs let go, counted as timed out while running).
     */
    private ModelResult callHere(Map<String, ?> inputs, int[] depth) {
        Objects.requireNonNull(inputs, "inputs");
        List<Object> ordered = signature.order(inputs);
        long listRows = Signature.textRows(ordered);
        List<Object> held = hold(ordered);
        try {
            if (!enter()) {
                throw new IllegalStateException("model " + name + " is closed");
            }
            try {
                long admitted = System.nanoTime();
                recorder.admitted();
                recorder.waited(0);
                ModelResult answer;
                try {
                    answer = Worker.callOnce(call, signature, recorder, held, 1, -1, listRows, 0, depth);
                } catch (RuntimeException | Error e) {
                    ModelTimeoutException late = late(admitted);
                    if (late == null) {
                        recorder.failed();
                        throw e;
                    }
                    late.addSuppressed(e); // a queued call's caller would have had its timeout before this
                    throw late;
                }
                ModelTimeoutException late = late(admitted);
                if (late != null) {
                    answer.close();
                    throw late;
                }
                recorder.answered();
                return answer;
            } finally {
                leave();
            }
        } finally {
            Request.closeTensors(held);
        }
    }

    /**
     * {@return the timeout of a call on the caller's own thread admitted at {@code admitted}, counted,
     * if its deadline passed while it ran; else null}
     */
    private ModelTimeoutException late(long admitted) {
        long ran = System.nanoTime() - admitted;
        if (timeout == null || ran <= timeout.toNanos()) {
            return null;
        }
        recorder.timedOut(true, ran);
        return new ModelTimeoutException("model " + name + ": the deadline of "
                + String.format("%.1f", timeout.toNanos() / 1e6) + " ms passed while its model call ran"
                + " on the caller's thread (" + String.format("%.1f", ran / 1e6) + " ms)");
    }

    /** {@return whether a caller may run the model on its own thread: the model is open, and stays loaded until {@link #leave()}} */
    private boolean enter() {
        if (closed.get()) {
            return false;
        }
        for (int u = users.get(); u > 0; u = users.get()) {
            if (users.compareAndSet(u, u + 1)) {
                return true;
            }
        }
        return false;
    }

    private boolean onModelThread() {
        return workers.contains(Thread.currentThread());
    }

    /**
     * Without batching, a caller whose request is the only one in flight looks for its answer a
     * moment ({@link Look}) before it parks, when the model's calls are {@linkplain
     * Recorder#quickModel() quick}: such a model answers within that, and waking a parked thread (a
     * virtual thread's carrier included) costs a large part of its call. With batching an answer comes
     * after the batch gathers, and with other requests in flight it comes later while the cores
     * have their work to do: those callers park at once. The model's own run time decides, not how
     * long answers took: an answer that a parked caller waited for holds its wake-up and the
     * worker's, so judged by those a quick model looked slow and both sides parked for good (a
     * virtual thread in a loop of mlp calls: +34 µs a call, against +2 µs for the bare hand-off).
     * A look lasts {@link Look#NANOS} more than twice the model's quick run time
     * ({@link Recorder#answerLookNanos()}). Looks that keep missing (a machine too busy to answer
     * within one) give up as {@link Look} says, after 16 misses in a row.
     */
    private void lookForAnswer(Request r) {
        if (recorder.quickModel()) {
            answers.lookFor(r::isDone, false, recorder.answerLookNanos());
        }
    }

    /**
     * Waits for the answer of {@code r}, at most until its deadline (the deadline's timer may be
     * late: its own callbacks may hold it up).
     */
    private <A> A await(Request<A> r) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    if (!interrupted && r.hasDeadline) {
                        try {
                            return r.get(Math.max(0, r.deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                        } catch (TimeoutException e) {
                            scheduler.expire(r); // settled now, by this thread or another
                        }
                    }
                    return r.get();
                } catch (InterruptedException e) {
                    if (!interrupted) {
                        interrupted = true;
                        if (r.cancel(false)) {
                            throw new CancellationException("interrupted while waiting for model " + name);
                        }
                    }
                    // settled already: its answer (or error) is a moment away, and the caller's
                }
            }
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            if (e.getCause() instanceof Error err) {
                throw err;
            }
            throw new IllegalStateException(e.getCause());
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Queues a call and returns at once. It throws at once what {@link #predict(Map)} throws at once
     * (a broken signature, a full queue, a closed model); the future fails only with what happens
     * after admission (a {@link ModelTimeoutException}, the model's error, an output that breaks the
     * signature). Cancelling the future drops the request if its model call has not started;
     * completing it from outside ({@code complete}, {@code orTimeout}, {@code completeOnTimeout})
     * settles the request as a cancel does, and a later answer is let go. The future may complete on
     * one of the model's threads, or on a virtual thread at its deadline: keep its callbacks short,
     * or use the {@code ...Async} forms; a callback on the model's own thread must not call
     * {@link #predict(Map)} (it throws {@link IllegalStateException}), nor wait for another call.
     *
     * @param inputs the inputs by name
     * @return the outputs by name, owned by whoever takes them from the future
     * @throws IllegalArgumentException if the inputs break the declared signature
     * @throws IllegalStateException    if the model is closed
     * @throws ModelOverloadedException if the queue is full
     */
    public CompletableFuture<Map<String, Tensor>> submit(Map<String, ? extends Tensor> inputs) {
        tensorsOnly("submit");
        return admit(inputs, ModelResult::takeTensors);
    }

    private <A> Request<A> admit(Map<String, ?> inputs, Function<ModelResult, A> shape) {
        Objects.requireNonNull(inputs, "inputs");
        if (closed.get()) {
            throw new IllegalStateException("model " + name + " is closed");
        }
        List<Object> ordered = signature.order(inputs);
        long rows = scheduler.batching() ? Signature.rowsOf(ordered) : 1;
        long listRows = scheduler.batching() ? rows : Signature.textRows(ordered);
        String key = scheduler.batching() ? Signature.batchKey(ordered) : null;
        return scheduler.admit(hold(ordered), rows, listRows, key, shape);
    }

    /**
     * {@return the request's own handles of the inputs: a caller may close its tensors once its
     * call is settled; text inputs as they are (their lists are the request's own copies)}
     */
    private List<Object> hold(List<Object> ordered) {
        List<Object> held = new ArrayList<>(ordered.size());
        try {
            for (Object o : ordered) {
                held.add(o instanceof Tensor t ? t.share() : o);
            }
        } catch (IllegalStateException e) {
            Request.closeTensors(held);
            throw new IllegalArgumentException("model " + name + ": an input was closed while its call was admitted", e);
        } catch (RuntimeException | Error e) {
            Request.closeTensors(held);
            throw e;
        }
        return Collections.unmodifiableList(held);
    }

    /**
     * Tells a batching model that a call is on its way, for a caller that knows it before it can
     * call (a server reading a request's body). While calls are announced, a batch that gathers
     * requests for {@code maxDelay} runs as soon as it, and the batches running, hold as many
     * requests as calls are announced: a lone request does not wait out the delay for company that
     * is not coming. Close the announcement once the call returned, or once the caller knows it will
     * not call (a bad request); a request made without one counts as well, so a model is best
     * announced by all its callers or by none. Without batching it changes nothing.
     *
     * {@snippet :
     * PythonModel model = PythonModel.builder().torchScript(Path.of("mlp.pt"))
     *         .input("x", DataType.FLOAT32, -1, 256).batching(64, Duration.ofMillis(2)).build();
     * // in each request's handler, before it reads the request's body:
     * try (PythonModel.Announcement coming = model.announce()) {
     *     float[] body = new float[256];      // read here: the batch being gathered waits for it
     *     try (Tensor x = Tensor.of(body, 1, 256); Tensor y = model.predict(x)) {
     *         System.out.println(Arrays.toString(y.toFloatArray()));
     *     }
     * }
     * }
     *
     * @return the announcement, to close once the call is done with
     */
    public Announcement announce() {
        scheduler.announce();
        return new Announcement(scheduler);
    }

    /**
     * A call on its way to a batching model ({@link PythonModel#announce()}); closing it, once or
     * more, says the call is done with.
     */
    public static final class Announcement implements AutoCloseable {
        private final Scheduler scheduler;
        private final AtomicBoolean closed = new AtomicBoolean();

        private Announcement(Scheduler scheduler) {
            this.scheduler = scheduler;
        }

        /** The call is done with (answered, failed, or never to be made); idempotent. */
        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                scheduler.unannounce();
            }
        }
    }

    /** {@return the model's name: the builder's, else the file's name without its extension, or the function's} */
    public String name() {
        return name;
    }

    /** {@return the declared tensor inputs, in the model's order; empty when none were declared} */
    public List<TensorSpec> inputs() {
        return signature.inputs();
    }

    /** {@return the declared text inputs' names, in the model's order; empty when none were declared} */
    public List<String> textInputs() {
        return Signature.names(signature.inputPorts(), Signature.Kind.TEXT);
    }

    /** {@return the declared tensor outputs, in the model's order; empty when none were declared} */
    public List<TensorSpec> outputs() {
        return signature.outputs();
    }

    /** {@return the declared text outputs' names, in the model's order; empty when none were declared} */
    public List<String> textOutputs() {
        return Signature.names(signature.outputPorts(), Signature.Kind.TEXT);
    }

    /** {@return the declared value outputs' names, in the model's order; empty when none were declared} */
    public List<String> valueOutputs() {
        return Signature.names(signature.outputPorts(), Signature.Kind.VALUE);
    }

    /** {@return the requests waiting in the queue now for a model call (not those running)} */
    public int queued() {
        return scheduler.queued();
    }

    /** {@return whether {@link #close()} was called: the model admits no more calls} */
    public boolean isClosed() {
        return closed.get();
    }

    /** {@return the counters and latencies since the model was built} */
    public ModelStats stats() {
        return recorder.stats();
    }

    /**
     * Stops admitting calls, answers every call already admitted, stops the model's threads (each
     * frees its batch buffers) and lets go of the model. Idempotent, from any thread. It returns
     * within the per-call deadline, or 30 s without one: calls still queued then fail with an
     * {@link IllegalStateException}, and a model call still running finishes on its own. From a
     * callback on one of the model's own threads it returns without waiting for the calls still
     * queued: that thread answers them once the callback returns.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        boolean onModelThread = onModelThread();
        scheduler.close();
        if (callsHere && !Thread.currentThread().isVirtual() && callingHere.get()[0] > 0) {
            // from inside one of its own calls (a model thread's or a caller's), which holds a slot
            // and a place among the users: the others finish as they would, and the last one out
            // lets go of the model; waiting for them here would wait for this very call
            return;
        }
        long until = System.nanoTime() + (timeout != null ? timeout : CLOSE_WAIT).toNanos();
        // A caller inside a GIL scope lets it go: the workers need it to finish.
        python.allowThreads(() -> {
            for (Thread w : workers) {
                if (w != Thread.currentThread()) {
                    join(w, until);
                }
            }
        });
        if (onModelThread) {
            return; // this thread answers what is queued once its callback returns
        }
        if (callsHere) { // the calls running on their callers' threads finish too
            python.allowThreads(() -> awaitSlots(until));
        }
        python.allowThreads(() -> streams.close(until));
        for (Request<?> r : scheduler.drain()) {
            r.fail(new IllegalStateException("model " + name + " was closed before this call could run"));
        }
    }

    private void awaitSlots(long until) {
        try {
            if (slots.tryAcquire(workerCount, Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                slots.release(workerCount);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void join(Thread t, long until) {
        try {
            t.join(Duration.ofNanos(Math.max(0, until - System.nanoTime())));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "PythonModel[" + name + ", inputs " + signature.inputs() + ", outputs " + signature.outputs() + "]";
    }

    /**
     * The settings of a {@link PythonModel}: exactly one source ({@link #torchScript},
     * {@link #exportedProgram}, {@link #factory}, {@link #source}), and optionally its inputs and
     * outputs, batching, workers, queue and deadline.
     */
    public static final class Builder {
        /** The warm-up's one row of a text input. */
        private static final String WARM_UP_TEXT = "dlpack4j warm-up";
        private String name;
        private Python python;
        private ModelSource source;
        /** Whether a factory's or source's callable gets torch tensors ({@link #torchInputs()}). */
        private boolean torchInputs;
        private final List<Signature.Port> inputs = new ArrayList<>();
        private final List<Signature.Port> outputs = new ArrayList<>();
        private long maxBatchRows;
        private Duration maxDelay = Duration.ZERO;
        private int workers = 1;
        private int maxQueue = 1_000;
        private Duration timeout;
        private Duration streamTimeout;
        private ModelListener listener;
        /** The warm-up's inputs ({@link #warmUp(Map)}); null for zeros and a line of text. */
        private Map<String, ?> warmUpInputs;

        private Builder() {
        }

        /**
         * Names the model (in errors, thread names, stats and JFR events).
         *
         * @param name the model's name
         * @return this builder
         */
        public Builder name(String name) {
            this.name = Objects.requireNonNull(name, "name");
            return this;
        }

        /**
         * The interpreter to load the model into; {@link Python#start()} when not given.
         *
         * @param python the process's interpreter
         * @return this builder
         */
        public Builder python(Python python) {
            this.python = Objects.requireNonNull(python, "python");
            return this;
        }

        /**
         * A TorchScript file: {@code torch.jit.load(file, map_location="cpu")}, in eval mode.
         *
         * @param file the file {@code torch.jit.save} wrote
         * @return this builder
         */
        public Builder torchScript(Path file) {
            return source(new ModelSource.TorchScript(file.toAbsolutePath()));
        }

        /**
         * An exported program: {@code torch.export.load(file).module()}. With batching, its inputs'
         * dim 0 must be dynamic ({@code torch.export.Dim}): {@link #build()} refuses it otherwise.
         *
         * @param file the file {@code torch.export.save} wrote
         * @return this builder
         */
        public Builder exportedProgram(Path file) {
            return source(new ModelSource.ExportedProgram(file.toAbsolutePath()));
        }

        /**
         * A Python function that makes the model: {@code module.function(*args)} returns the callable.
         *
         * @param module   the module to import
         * @param function its function that returns the model's callable
         * @param args     the function's arguments: strings, numbers, booleans, lists and maps of them
         * @return this builder
         */
        public Builder factory(String module, String function, Object... args) {
            return source(new ModelSource.Factory(Objects.requireNonNull(module, "module"),
                    Objects.requireNonNull(function, "function"), Arrays.asList(args.clone())));
        }

        /**
         * Python source that makes the model: {@code code} runs as a module of its own (its tracebacks
         * show its lines, under the file name {@code <model NAME>}), then its {@code function(*args)}
         * returns the callable.
         *
         * @param code     Python code that defines {@code function}
         * @param function its function that returns the model's callable
         * @param args     the function's arguments: strings, numbers, booleans, lists and maps of them
         * @return this builder
         */
        public Builder source(String code, String function, Object... args) {
            return source(new ModelSource.Source(Objects.requireNonNull(code, "code"),
                    Objects.requireNonNull(function, "function"), Arrays.asList(args.clone())));
        }

        /**
         * The callable of {@link #factory} or {@link #source} gets torch tensors over the inputs'
         * memory, made in Java through torch's C Exchange API without a copy, instead of dlpack4j's
         * Python tensor objects: a torch module then needs no {@code torch.from_dlpack} of its own,
         * which costs a few microseconds of Python a call. A read-only input comes as a torch tensor
         * all the same (torch has no read-only tensors): the model must not write it. An input that
         * torch cannot take this way (a view with a negative stride, a dtype torch lacks) fails its
         * call with {@link io.github.dlpack4j.DlpackException} before torch sees it. TorchScript
         * files and exported programs always get torch tensors.
         *
         * @return this builder
         */
        public Builder torchInputs() {
            torchInputs = true;
            return this;
        }

        private Builder source(ModelSource s) {
            if (source != null) {
                throw new IllegalStateException("the model has a source already: " + source);
            }
            source = s;
            return this;
        }

        /**
         * Declares the next input, in the order the model takes them.
         *
         * @param name  the input's name, the key of {@link PythonModel#predict(Map)}
         * @param dtype its element type
         * @param shape its extents: -1 for any; with batching, dim 0 is the rows
         * @return this builder
         */
        public Builder input(String name, DataType dtype, long... shape) {
            inputs.add(port(inputs, "input", name, Signature.Kind.TENSOR, new TensorSpec(name, dtype, shape)));
            return this;
        }

        /**
         * Declares the next input as text, in the order the model takes its inputs: a string a row.
         * A call gives it a {@code String} (one row) or a non-empty {@code List<String>}; the model
         * gets a Python {@code list[str]} (UTF-8 both ways). With batching, the rows of the requests
         * in a batch are concatenated into one list (in the order the requests were taken), and
         * every input of a call has the same rows.
         *
         * @param name the input's name, the key of {@link PythonModel#run(Map)}
         * @return this builder
         */
        public Builder textInput(String name) {
            inputs.add(port(inputs, "input", name, Signature.Kind.TEXT, null));
            return this;
        }

        /**
         * Declares the next output, in the order the model returns them (or its name in the dict it returns).
         *
         * @param name  the output's name
         * @param dtype its element type
         * @param shape its extents: -1 for any; with batching, dim 0 is the rows
         * @return this builder
         */
        public Builder output(String name, DataType dtype, long... shape) {
            outputs.add(port(outputs, "output", name, Signature.Kind.TENSOR, new TensorSpec(name, dtype, shape)));
            return this;
        }

        /**
         * Declares the next output as text: the model returns a list (or tuple) of {@code str}, one
         * a row ({@link ModelResult#texts}). Its length must be the call's rows (with batching the
         * batch's, else a text input's, if any); each call gets its own rows back.
         *
         * @param name the output's name
         * @return this builder
         */
        public Builder textOutput(String name) {
            outputs.add(port(outputs, "output", name, Signature.Kind.TEXT, null));
            return this;
        }

        /**
         * Declares the next output as values: the model returns a list (or tuple) with one
         * JSON-like value a row ({@link ModelResult#values}): dict (str keys) → {@code Map<String,
         * Object>} in order, list and tuple → {@code List<Object>}, str → {@code String}, int →
         * {@code Long}, float → {@code Double}, bool → {@code Boolean}, None → {@code null};
         * anything else (bytes, an int beyond 64 bits, a NumPy scalar, a tensor) fails the call
         * with an {@link IllegalStateException} naming the output, the row and the Python type.
         * Rows as for {@link #textOutput}.
         *
         * @param name the output's name
         * @return this builder
         */
        public Builder valueOutput(String name) {
            outputs.add(port(outputs, "output", name, Signature.Kind.VALUE, null));
            return this;
        }

        private static Signature.Port port(List<Signature.Port> declared, String what, String name, Signature.Kind kind,
                                           TensorSpec spec) {
            Objects.requireNonNull(name, "name");
            if (declared.stream().anyMatch(s -> s.name().equals(name))) {
                throw new IllegalArgumentException(what + " " + name + " is declared twice");
            }
            return new Signature.Port(name, kind, spec);
        }

        /**
         * Turns on dynamic batching (off unless called): requests whose shapes after dim 0 match are
         * stacked along dim 0, up to {@code maxBatchRows} rows, and a batch runs when it is full, when
         * {@code maxDelay} has passed since its first request arrived, or at once when
         * {@code maxDelay} is zero and a worker is free. A request with more rows runs alone.
         *
         * @param maxBatchRows the most rows of one model call, at least 1
         * @param maxDelay     the longest a batch waits for more requests
         * @return this builder
         */
        public Builder batching(int maxBatchRows, Duration maxDelay) {
            if (maxBatchRows < 1 || maxDelay.isNegative()) {
                throw new IllegalArgumentException("batching(" + maxBatchRows + ", " + maxDelay
                        + "): rows at least 1, a delay of zero or more");
            }
            this.maxBatchRows = maxBatchRows;
            this.maxDelay = maxDelay;
            return this;
        }

        /**
         * How many model calls may run at once (default 1): the model's threads, which hold the GIL
         * in turn; torch lets it go inside its operators, so their calls overlap there.
         *
         * @param calls the number of the model's threads, at least 1
         * @return this builder
         */
        public Builder workers(int calls) {
            if (calls < 1) {
                throw new IllegalArgumentException("workers(" + calls + "): at least 1");
            }
            this.workers = calls;
            return this;
        }

        /**
         * How many requests may wait (default 1,000); past it a call fails at once with
         * {@link ModelOverloadedException}.
         *
         * @param requests the queue's size, at least 1
         * @return this builder
         */
        public Builder maxQueue(int requests) {
            if (requests < 1) {
                throw new IllegalArgumentException("maxQueue(" + requests + "): at least 1");
            }
            this.maxQueue = requests;
            return this;
        }

        /**
         * A deadline per call, from admission, waiting and running together (default none): past
         * it the call fails with {@link ModelTimeoutException}, and its caller waits no longer. A
         * platform caller running the call on its own thread (no batching, a slot free) cannot stop
         * it at the deadline: it fails so once the model call is over.
         *
         * @param perCall the deadline, more than zero
         * @return this builder
         */
        public Builder timeout(Duration perCall) {
            if (perCall.isNegative() || perCall.isZero()) {
                throw new IllegalArgumentException("timeout(" + perCall + "): more than zero");
            }
            this.timeout = perCall;
            return this;
        }

        /**
         * The inputs of the warm-up call that {@link #build()} makes (by default zeros of the
         * declared tensor inputs, -1 extents as 1, and the text {@code "dlpack4j warm-up"}): for a
         * model whose inputs must mean something, a JSON text for instance. The map's values are
         * as for {@link PythonModel#run}; the caller keeps its tensors and closes them.
         *
         * @param inputs the warm-up's inputs by name
         * @return this builder
         */
        public Builder warmUp(Map<String, ?> inputs) {
            this.warmUpInputs = Map.copyOf(inputs);
            return this;
        }

        /**
         * A deadline for each stream ({@link PythonModel#stream}) as a whole, from its subscription
         * to its last item (default none): past it the stream fails with
         * {@link ModelTimeoutException} and its generator is closed. {@link #timeout} bounds a
         * stream's first item.
         *
         * @param perStream the deadline, more than zero
         * @return this builder
         */
        public Builder streamTimeout(Duration perStream) {
            if (perStream.isNegative() || perStream.isZero()) {
                throw new IllegalArgumentException("streamTimeout(" + perStream + "): more than zero");
            }
            this.streamTimeout = perStream;
            return this;
        }

        /**
         * A listener told of each request's outcome, queue wait and model call as they are counted
         * in {@link PythonModel#stats()} (none by default): for a metrics library's meters.
         *
         * @param listener the listener, quick and never throwing
         * @return this builder
         */
        public Builder listener(ModelListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Loads the model, warms it up and starts its threads. With inputs declared, the model runs
         * once on zeros (-1 extents as 1), checked against the declared outputs; that run is not
         * counted in the stats.
         *
         * @return the model, ready for calls
         * @throws IllegalStateException if no source was given, or an exported program cannot batch
         *                               (a static dim 0), or a declared input or output has a sub-byte
         *                               dtype (FP4, FP6, sub-byte integers) while batching is on, or the
         *                               warm-up's outputs break the signature
         * @throws PythonException       if Python cannot load the model, or the warm-up raised
         */
        public PythonModel build() {
            if (source == null) {
                throw new IllegalStateException("no model: give torchScript, exportedProgram, factory or source");
            }
            if (python == null) {
                python = Python.start();
            }
            String n = name != null ? name : source.defaultName();
            Signature signature = new Signature(n, inputs, outputs, maxBatchRows > 0);
            ModelCall call = ModelCall.load(python, n, source, torchInputs || source.torchInputs(),
                    signature.outputNames(), signature.outputKinds(), maxBatchRows > 0);
            try {
                if (!inputs.isEmpty()) {
                    warmUp(call, signature);
                }
            } catch (RuntimeException | Error e) {
                call.close();
                throw e;
            }
            return new PythonModel(this, n, call);
        }

        private void warmUp(ModelCall call, Signature signature) {
            Map<String, Object> given = new LinkedHashMap<>();
            try {
                for (Signature.Port p : inputs) {
                    Object v = warmUpInputs != null ? warmUpInputs.get(p.name()) : null;
                    if (v instanceof Tensor t) {
                        v = t.share(); // closed below, as the zeros are
                    }
                    given.put(p.name(), v != null ? v : p.kind() == Signature.Kind.TEXT ? WARM_UP_TEXT
                            : Tensor.zeros(p.spec().dtype(), p.spec().warmUpShape()));
                }
                List<Object> ordered = signature.order(given);
                ModelCall.Outputs out = call.warmUp(ordered);
                if (out == null) { // a generator model: its first item was made
                    return;
                }
                try (out) {
                    signature.checkOutputs(out, maxBatchRows > 0 ? Signature.rowsOf(ordered) : -1,
                            maxBatchRows > 0 ? Signature.rowsOf(ordered) : Signature.textRows(ordered));
                }
            } finally {
                Request.closeTensors(List.copyOf(given.values()));
            }
        }
    }
}
