package io.github.dlpack4j.model;

import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.github.dlpack4j.python.PyObject;

/**
 * One stream of a model ({@link PythonModel#stream}): its subscriber, demand and generator. The
 * model's stream threads ({@link Streams}) advance the generator one item per step while the
 * subscriber's demand lasts; every signal to the subscriber (onSubscribe first, then onNext in
 * order, then at most one of onComplete and onError) runs in order on virtual threads, one at a
 * time, never on a stream thread: a subscriber that blocks in onNext holds up only its own stream.
 */
final class ModelStream implements Flow.Subscription {
    /** The subscribers' signals run here, a virtual thread per run of queued signals. */
    private static final Executor SIGNALS = Executors.newThreadPerTaskExecutor(
            Thread.ofVirtual().name("dlpack4j-model-stream-signal").factory());

    private final Streams owner;
    private final Flow.Subscriber<? super ModelResult> subscriber;
    /** The stream's own handles of its inputs (each a Tensor or Texts), closed once its generator started or it ended. */
    private List<Object> inputs;
    /** {@link System#nanoTime()} at admission. */
    final long admitted;
    private final AtomicLong demand = new AtomicLong();
    /** Whether the stream is in its owner's ready queue or being stepped; set by whoever queues it. */
    final AtomicBoolean scheduled = new AtomicBoolean();
    /** Ended: completed, failed, timed out, cancelled or closed; no item is delivered after it. */
    private boolean ended;
    private volatile boolean endedFlag;
    /** The generator, once started: touched only by the stream thread stepping the stream. */
    private PyObject items;
    /** Whether its generator is closed or was never started and never will be. */
    private boolean released;
    private final AtomicLong delivered = new AtomicLong();
    /** The subscriber cancelled: a signal still waiting in its queue is dropped (an item closed), not run. */
    private boolean cancelled;
    /** {@link System#nanoTime()} at the end. */
    private long endedAt;
    /** The items handed to the subscriber's onNext; under this object's lock. */
    private long handed;
    private volatile long firstItemNanos = -1;
    volatile Future<?> firstItemTimer;
    volatile Future<?> streamTimer;
    private final ConcurrentLinkedQueue<Runnable> signals = new ConcurrentLinkedQueue<>();
    private final AtomicInteger pendingSignals = new AtomicInteger();

    ModelStream(Streams owner, Flow.Subscriber<? super ModelResult> subscriber, List<Object> inputs, long admitted) {
        this.owner = owner;
        this.subscriber = subscriber;
        this.inputs = inputs;
        this.admitted = admitted;
    }

    Flow.Subscriber<? super ModelResult> subscriber() {
        return subscriber;
    }

    /** Queues a signal to the subscriber, after those queued before it. */
    void signal(Runnable s) {
        signals.add(s);
        if (pendingSignals.getAndIncrement() == 0) {
            SIGNALS.execute(this::drainSignals);
        }
    }

    private void drainSignals() {
        do {
            Runnable s = signals.poll();
            try {
                s.run();
            } catch (RuntimeException | Error e) {
                // a subscriber that throws breaks the protocol (rule 2.13): its stream is cancelled
                cancel();
            }
        } while (pendingSignals.decrementAndGet() > 0);
    }

    @Override
    public void request(long n) {
        if (n <= 0) {
            end(Outcome.FAILED, new IllegalArgumentException("request(" + n + "): a subscriber requests at least 1 "
                    + "item (Reactive Streams rule 3.9)"));
            return;
        }
        demand.accumulateAndGet(n, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b);
        owner.schedule(this);
    }

    @Override
    public void cancel() {
        synchronized (this) {
            cancelled = true; // nothing queued reaches the subscriber now, even after an end before the cancel
        }
        end(Outcome.CANCELLED, null);
    }

    /** {@return whether the subscriber cancelled}: its queued signals are dropped */
    synchronized boolean isCancelled() {
        return cancelled;
    }

    private void count(Outcome outcome) {
        if (owner != null) { // null for a refused subscription's signals
            owner.ended(this, outcome);
        }
    }

    /** {@return whether a stream thread has work here: an item to produce, or a generator to close} */
    synchronized boolean hasWork() {
        return ended ? !released : demand.get() > 0;
    }

    synchronized boolean isEnded() {
        return ended;
    }

    boolean endedNow() {
        return endedFlag;
    }

    /** The outcomes a stream can end with. */
    enum Outcome {
        COMPLETED("completed"), FAILED("failed"), TIMED_OUT("timed out"), CANCELLED("cancelled"), CLOSED("closed");

        final String label;

        Outcome(String label) {
            this.label = label;
        }
    }

    /**
     * Ends the stream once: counts it, tells the subscriber (onComplete, or onError with
     * {@code error}; nothing after a cancel), and leaves its generator for a stream thread to close.
     *
     * @return false if it had ended already
     */
    boolean end(Outcome outcome, Throwable error) {
        synchronized (this) {
            if (ended) {
                return false;
            }
            ended = true; // no item is delivered from now on
            endedFlag = true;
            endedAt = System.nanoTime();
            cancelTimers();
        }
        if (outcome == Outcome.CANCELLED) {
            count(outcome); // every item it will ever hand is handed already
        } else {
            // counted in the signal queue, after every item queued before the end was handed or
            // dropped: a subscriber that cancels before it hears the end makes the stream a cancelled one
            signal(() -> {
                boolean heard = !isCancelled();
                count(heard ? outcome : Outcome.CANCELLED); // counted before the subscriber hears of it
                if (!heard) {
                    return;
                }
                if (outcome == Outcome.COMPLETED) {
                    subscriber.onComplete();
                } else {
                    subscriber.onError(error);
                }
            });
        }
        if (owner != null) {
            owner.schedule(this); // the generator's close, on a stream thread
        }
        return true;
    }

    private void cancelTimers() {
        Future<?> t = firstItemTimer;
        if (t != null) {
            t.cancel(false);
        }
        t = streamTimer;
        if (t != null) {
            t.cancel(false);
        }
    }

    /**
     * Delivers an item unless the stream ended meanwhile (then the item's tensors are closed).
     *
     * @return whether it was delivered
     */
    boolean deliver(ModelResult item, long now) {
        synchronized (this) {
            if (ended) {
                item.close();
                return false;
            }
            demand.decrementAndGet();
            if (delivered.getAndIncrement() == 0) {
                firstItemNanos = now - admitted;
                Future<?> t = firstItemTimer;
                if (t != null) {
                    t.cancel(false);
                }
            }
            signal(() -> {
                if (hand()) {
                    subscriber.onNext(item);
                } else {
                    item.close();
                }
            });
        }
        return true;
    }

    /** {@return whether a queued item goes to the subscriber}: not once it cancelled (rule 3.6 at once, not only eventually) */
    private synchronized boolean hand() {
        if (cancelled) {
            return false;
        }
        handed++;
        return true;
    }

    /** {@return the items made for the subscriber so far} */
    long delivered() {
        return delivered.get();
    }

    /**
     * {@return the items handed to the subscriber's onNext}: final once the stream is counted (after
     * a cancel none is handed; an end's count runs after every item queued before it)
     */
    synchronized long handed() {
        return handed;
    }

    /** {@return how long it ran, from admission to its end} */
    synchronized long ranNanos() {
        return endedAt - admitted;
    }

    long firstItemNanos() {
        return firstItemNanos;
    }

    /** {@return the generator, or null before it started} Called by the stream thread stepping it. */
    PyObject items() {
        return items;
    }

    /** The generator started: the stream's hold of its inputs goes. */
    void started(PyObject generator) {
        items = generator;
        releaseInputs();
    }

    /** {@return the inputs, for the generator's start} */
    List<Object> inputs() {
        return inputs;
    }

    /** Marks the generator closed (or never to start) and lets go of the inputs; idempotent. */
    synchronized void released() {
        released = true;
        items = null;
        releaseInputs();
    }

    private void releaseInputs() {
        if (inputs != null) {
            Request.closeTensors(inputs);
            inputs = null;
        }
    }
}
