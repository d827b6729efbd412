package io.github.dlpack4j.model;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import io.github.dlpack4j.python.PyObject;

/**
 * A model's streams ({@link PythonModel#stream}): admission, the stream threads that advance their
 * generators, deadlines and close. A stream thread takes a ready stream (one with demand, or one to
 * close), takes one of the model's {@code slots} (so that at most {@code workers} model calls run at
 * once, streams' steps and predict's calls together), advances the generator by one item, and puts
 * the stream back at the end of the queue while its demand lasts: the model's {@code workers}
 * stream threads interleave any number of streams one item at a time.
 */
final class Streams {
    /** The queue's marker that a stream thread stops. */
    private static final ModelStream STOP = new ModelStream(null, null, List.of(), 0);
    /**
     * The most steps a stream thread takes of one stream in a row while no other stream is ready and
     * no other model call waits for a slot: a lone stream's items come without a turn through the
     * queue and the slot each time, and a stream or call that becomes ready waits at most one step.
     */
    private static final int RUN = 64;
    /** How long close waits for a stream thread to close the generators of the streams it ended. */
    private static final long CLOSE_GRACE_NANOS = 5_000_000_000L;

    private final String name;
    private final ModelCall call;
    private final Recorder recorder;
    private final Semaphore slots;
    private final int threads;
    /** Streams admitted and not ended, at most this many. */
    private final int maxOpen;
    private final long firstItemNanos;
    private final long streamNanos;
    private final BooleanSupplier enter;
    private final Runnable leave;
    private final LinkedBlockingQueue<ModelStream> ready = new LinkedBlockingQueue<>();
    /** Streams admitted whose generators are not yet closed. */
    private final Set<ModelStream> open = ConcurrentHashMap.newKeySet();
    private final List<Thread> running = new ArrayList<>();
    private volatile boolean closed;

    /**
     * @param enter  takes a hold of the model for a stream thread: false once it is closed
     * @param leave  lets go of that hold
     */
    Streams(String name, ModelCall call, Recorder recorder, Semaphore slots, int threads, int maxOpen,
            long firstItemNanos, long streamNanos, BooleanSupplier enter, Runnable leave) {
        this.name = name;
        this.call = call;
        this.recorder = recorder;
        this.slots = slots;
        this.threads = threads;
        this.maxOpen = maxOpen;
        this.firstItemNanos = firstItemNanos;
        this.streamNanos = streamNanos;
        this.enter = enter;
        this.leave = leave;
    }

    /**
     * Admits a stream for a subscriber: it gets onSubscribe, or onSubscribe and onError (the model
     * closed, or {@code maxOpen} streams open).
     *
     * @param inputs the stream's own handles of its inputs, which it closes
     */
    void open(List<Object> inputs, Flow.Subscriber<? super ModelResult> subscriber) {
        ModelStream s = new ModelStream(this, subscriber, inputs, System.nanoTime());
        RuntimeException refused = null;
        synchronized (this) {
            if (closed) {
                refused = new IllegalStateException("model " + name + " is closed");
            } else if (open.size() >= maxOpen) {
                recorder.rejected(maxOpen);
                refused = new ModelOverloadedException("model " + name + ": " + maxOpen + " streams are open already"
                        + " (maxQueue plus workers); try again later");
            } else if (!startThreads()) {
                refused = new IllegalStateException("model " + name + " is closed");
            } else {
                open.add(s);
                recorder.admitted();
            }
        }
        if (refused != null) {
            s.released();
            refuse(subscriber, refused);
            return;
        }
        s.signal(() -> subscriber.onSubscribe(s));
        if (firstItemNanos > 0) {
            s.firstItemTimer = Scheduler.later(() -> {
                if (s.delivered() == 0) {
                    s.end(ModelStream.Outcome.TIMED_OUT, new ModelTimeoutException("model " + name + ": no item within "
                            + "the deadline of " + millis(firstItemNanos) + " ms for a stream's first item"));
                }
            }, firstItemNanos);
        }
        if (streamNanos > 0) {
            s.streamTimer = Scheduler.later(() -> s.end(ModelStream.Outcome.TIMED_OUT, new ModelTimeoutException(
                    "model " + name + ": the stream ran past its deadline of " + millis(streamNanos) + " ms after "
                            + s.delivered() + " items")), streamNanos);
        }
        if (s.endedNow()) { // ended before its timers were set
            s.end(ModelStream.Outcome.CANCELLED, null);
        }
    }

    private static String millis(long nanos) {
        return String.format("%.1f", nanos / 1e6);
    }

    /** Starts the stream threads on the first stream; under this object's lock. */
    private boolean startThreads() {
        if (!running.isEmpty()) {
            return true;
        }
        for (int i = 0; i < threads; i++) {
            if (!enter.getAsBoolean()) {
                return !running.isEmpty();
            }
            running.add(Thread.ofPlatform().name("dlpack4j-model-" + name + "-stream-" + i).daemon(true).start(this::drive));
        }
        return true;
    }

    /** Queues a stream that has work for a stream thread, unless it is queued or being stepped. */
    void schedule(ModelStream s) {
        if (s.hasWork() && s.scheduled.compareAndSet(false, true)) {
            ready.add(s);
        }
    }

    /**
     * A stream ended: counted once, its JFR event committed; as cancelled if its subscriber cancelled
     * before it heard the end.
     */
    void ended(ModelStream s, ModelStream.Outcome outcome) {
        switch (outcome) {
            case COMPLETED -> recorder.answered();
            case TIMED_OUT -> recorder.timedOut(s.handed() > 0, s.ranNanos());
            case FAILED, CLOSED -> recorder.failed();
            case CANCELLED -> {
            }
        }
        recorder.streamEnded(s.handed(), s.firstItemNanos(), outcome.label);
    }

    private void drive() {
        try {
            while (true) {
                ModelStream s;
                try {
                    s = ready.take();
                } catch (InterruptedException e) {
                    continue; // only close stops a stream thread
                }
                if (s == STOP) {
                    break;
                }
                slots.acquireUninterruptibly();
                try {
                    // while no other stream or model call waits, this one goes on without a turn through the queue
                    for (int steps = 0; steps < RUN
                            && (steps == 0 || ready.isEmpty() && !slots.hasQueuedThreads() && s.hasWork()); steps++) {
                        step(s);
                    }
                } finally {
                    slots.release();
                }
                s.scheduled.set(false);
                schedule(s);
            }
        } finally {
            leave.run();
        }
    }

    /** One step of a stream: its generator started and advanced by one item, or closed once it ended. */
    private void step(ModelStream s) {
        if (s.isEnded()) {
            closeGenerator(s);
            return;
        }
        if (!s.hasWork()) {
            return;
        }
        try {
            if (s.items() == null) {
                s.started(call.startStream(s.inputs()));
            }
            ModelResult item = call.step(s.items());
            if (item == null) {
                s.end(ModelStream.Outcome.COMPLETED, null);
            } else {
                s.deliver(item, System.nanoTime());
            }
        } catch (RuntimeException | Error e) {
            s.end(ModelStream.Outcome.FAILED, e);
        }
        if (s.isEnded()) {
            closeGenerator(s);
        }
    }

    private void closeGenerator(ModelStream s) {
        PyObject items = s.items();
        try {
            if (items != null) {
                call.closeStream(items);
            }
        } catch (RuntimeException e) {
            // the generator's own error while it closed: its stream has ended already
        } finally {
            s.released();
            open.remove(s);
            synchronized (this) {
                notifyAll();
            }
        }
    }

    /**
     * Admits no more streams, waits until {@code until} for the open ones to end, ends those still
     * open with an {@link IllegalStateException}, and stops the stream threads once they closed
     * their generators.
     */
    void close(long until) {
        synchronized (this) {
            closed = true;
            waitForOpen(until);
        }
        for (ModelStream s : List.copyOf(open)) {
            s.end(ModelStream.Outcome.CLOSED, new IllegalStateException("model " + name
                    + " was closed while this stream ran"));
        }
        synchronized (this) {
            waitForOpen(System.nanoTime() + CLOSE_GRACE_NANOS);
            for (int i = 0; i < running.size(); i++) {
                ready.add(STOP);
            }
        }
        for (Thread t : running) {
            if (t != Thread.currentThread()) {
                try {
                    t.join(TimeUnit.NANOSECONDS.toMillis(CLOSE_GRACE_NANOS));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /** Waits, holding this object's lock, until no stream is open or {@code until} passed. */
    private void waitForOpen(long until) {
        boolean interrupted = false;
        while (!open.isEmpty()) {
            long left = until - System.nanoTime();
            if (left <= 0) {
                break;
            }
            try {
                wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** {@return whether this thread is one of the stream threads} */
    boolean onStreamThread() {
        return running.contains(Thread.currentThread());
    }

    @Override
    public String toString() {
        return "Streams[" + name + ", " + open.size() + " open]";
    }

    /** Tells a subscriber that its stream cannot run: onSubscribe with a subscription that does nothing, then onError. */
    static void refuse(Flow.Subscriber<? super ModelResult> subscriber, Throwable error) {
        ModelStream none = new ModelStream(null, subscriber, List.of(), 0);
        none.signal(() -> subscriber.onSubscribe(new Flow.Subscription() {
            @Override
            public void request(long n) {
            }

            @Override
            public void cancel() {
            }
        }));
        none.signal(() -> {
            if (!none.isCancelled()) { // an onSubscribe that threw cancelled it (rule 2.13)
                subscriber.onError(error);
            }
        });
    }
}
