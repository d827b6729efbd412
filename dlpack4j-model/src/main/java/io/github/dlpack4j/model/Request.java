package io.github.dlpack4j.model;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;

import io.github.dlpack4j.Tensor;

/**
 * One admitted call: its inputs in the model's order, and the future its caller waits on. Whoever
 * settles the request first (the worker with the answer or the model's error, the deadline, the
 * caller's cancel) counts it, then completes the future, so that a caller woken by its answer sees
 * the stats count it; a later settler finds it settled and lets its outputs go.
 */
final class Request extends CompletableFuture<Map<String, Tensor>> {
    final List<Tensor> inputs;
    /** The call's rows (every input's dim 0) with batching; 1 without. */
    final long rows;
    /** What requests stacked together share ({@link Signature#batchKey}); null without batching. */
    final String key;
    /** {@link System#nanoTime()} at admission. */
    final long admitted;
    /** {@link System#nanoTime()} of the deadline; meaningless when {@link #hasDeadline} is false. */
    final long deadline;
    final boolean hasDeadline;
    private final Scheduler owner;
    /** Set by the worker before the model call: a cancel no longer drops the request then. */
    volatile boolean started;
    /** {@link System#nanoTime()} when its model call started, once {@link #started}. */
    volatile long startedAt;
    /** The deadline's timer, cancelled once the request is done. */
    volatile Future<?> timer;
    private final AtomicBoolean settled = new AtomicBoolean();

    Request(Scheduler owner, List<Tensor> inputs, long rows, String key, long admitted, long timeoutNanos) {
        this.owner = owner;
        this.inputs = inputs;
        this.rows = rows;
        this.key = key;
        this.admitted = admitted;
        this.hasDeadline = timeoutNanos > 0;
        this.deadline = admitted + timeoutNanos;
    }

    boolean expired(long now) {
        return hasDeadline && now - deadline >= 0;
    }

    /** Answers the caller; outputs that come too late (timed out, cancelled) are closed. */
    void answer(Map<String, Tensor> outputs) {
        if (settled.compareAndSet(false, true)) {
            owner.recorder().answered();
            complete(outputs);
            done();
        } else {
            outputs.values().forEach(Tensor::close);
        }
    }

    void fail(Throwable error) {
        if (settled.compareAndSet(false, true)) {
            owner.recorder().failed();
            completeExceptionally(error);
            done();
        }
    }

    /** Fails the request with a {@link ModelTimeoutException}, if it is still waiting for its answer. */
    void timeOut(long now) {
        boolean running = started;
        String where = running ? "its model call had run for " + millis(now - startedAt) + " ms of it"
                : "it waited in the queue";
        if (settled.compareAndSet(false, true)) {
            owner.recorder().timedOut(running, now - admitted);
            completeExceptionally(new ModelTimeoutException("model " + owner.name() + ": the deadline of "
                    + millis(deadline - admitted) + " ms passed while " + where));
            done();
        }
    }

    private static String millis(long nanos) {
        return String.format("%.1f", nanos / 1e6);
    }

    /** Drops the request from the queue if it has not started; its model call, if running, finishes. */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        if (!settled.compareAndSet(false, true)) {
            return isCancelled();
        }
        owner.drop(this);
        super.cancel(mayInterruptIfRunning);
        done();
        return true;
    }

    private void done() {
        Future<?> t = timer;
        if (t != null) {
            t.cancel(false);
        }
    }
}
