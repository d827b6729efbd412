package io.github.dlpack4j.model;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import io.github.dlpack4j.Tensor;

/**
 * One admitted call: its inputs in the model's order, and the future its caller waits on. Whoever
 * settles the request first (the worker with the answer or the model's error, the deadline, the
 * caller's cancel, or any other completion of the future from outside: {@code complete},
 * {@code orTimeout}, {@code completeOnTimeout}) counts it, then completes the future, so that a
 * caller woken by its answer sees the stats count it; a later settler finds it settled and lets its
 * outputs go.
 *
 * <p>The request holds its own handles of the caller's inputs ({@link Tensor#share()} at
 * admission): a caller that closes its tensors once its call is cancelled or timed out breaks
 * neither the stacking of a batch nor a model call on its memory. They are closed once the request
 * is settled and no worker {@linkplain #use() uses} them.
 */
final class Request<A> extends CompletableFuture<A> {
    /** The request's own handles of the inputs, in the model's order: each a {@link Tensor} or {@link Signature.Texts}. */
    final List<Object> inputs;
    /** The answer its caller takes from a call's result: the tensors ({@code predict}) or the result itself ({@code run}). */
    private final Function<ModelResult, A> shape;
    /** The call's rows (every input's dim 0, every text input's strings) with batching; 1 without. */
    final long rows;
    /** The rows each text or value output must have: {@link #rows} with batching, else a text input's rows or -1. */
    final long listRows;
    /** What requests stacked together share ({@link Signature#batchKey}); null without batching. */
    final String key;
    /** {@link System#nanoTime()} at admission. */
    final long admitted;
    /** {@link System#nanoTime()} of the deadline; meaningless when {@link #hasDeadline} is false. */
    final long deadline;
    final boolean hasDeadline;
    private final Scheduler owner;
    /**
     * Set under the scheduler's lock when a batch takes the request; a settler that may race with
     * that takes the lock first ({@link Scheduler#drop}), so {@link #done()} sees it.
     */
    volatile boolean claimed;
    /** Set by the worker before the model call: a cancel no longer drops the request then. */
    volatile boolean started;
    /** {@link System#nanoTime()} when its model call started, once {@link #started}. */
    volatile long startedAt;
    /** The deadline's timer, cancelled once the request is done. */
    volatile Future<?> timer;
    private final AtomicBoolean settled = new AtomicBoolean();
    /** Holders of {@link #inputs}: one for the unsettled request, one per worker using them; closed at 0. */
    private final AtomicInteger holders = new AtomicInteger(1);

    /**
     * @param inputs the request's own handles of the inputs, which it closes
     * @param shape  what its caller gets of a call's result
     */
    Request(Scheduler owner, List<Object> inputs, long rows, long listRows, String key, Function<ModelResult, A> shape,
            long admitted, long timeoutNanos) {
        this.owner = owner;
        this.inputs = inputs;
        this.rows = rows;
        this.listRows = listRows;
        this.shape = shape;
        this.key = key;
        this.admitted = admitted;
        this.hasDeadline = timeoutNanos > 0;
        this.deadline = admitted + timeoutNanos;
    }

    boolean expired(long now) {
        return hasDeadline && now - deadline >= 0;
    }

    /** {@return whether the request is settled: answered, failed, timed out, cancelled or completed from outside} */
    boolean settled() {
        return settled.get();
    }

    /**
     * A worker takes a hold of the inputs for the length of its model calls: they stay open, however
     * the request is settled meanwhile, until {@link #release()}.
     *
     * @return false if the inputs are closed already (the request settled before the worker got it)
     */
    boolean use() {
        for (int h = holders.get(); h > 0; h = holders.get()) {
            if (holders.compareAndSet(h, h + 1)) {
                return true;
            }
        }
        return false;
    }

    /** Lets go of a hold of the inputs; the last closes them. */
    void release() {
        if (holders.decrementAndGet() == 0) {
            closeTensors(inputs);
        }
    }

    /** Closes the tensors among a call's inputs. */
    static void closeTensors(List<Object> inputs) {
        for (Object o : inputs) {
            if (o instanceof Tensor t) {
                t.close();
            }
        }
    }

    /** Answers the caller; outputs that come too late (timed out, cancelled, completed from outside) are closed. */
    void answer(ModelResult outputs) {
        if (settled.compareAndSet(false, true)) {
            owner.recorder().answered();
            countSettled();
            if (!super.complete(shape.apply(outputs))) {
                outputs.close();
            }
            done();
        } else {
            outputs.close();
        }
    }

    void fail(Throwable error) {
        if (settled.compareAndSet(false, true)) {
            owner.recorder().failed();
            countSettled();
            super.completeExceptionally(error);
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
            countSettled();
            super.completeExceptionally(new ModelTimeoutException("model " + owner.name() + ": the deadline of "
                    + millis(deadline - admitted) + " ms passed while " + where));
            done();
        }
    }

    private static String millis(long nanos) {
        return String.format("%.1f", nanos / 1e6);
    }

    /**
     * Drops the request from the queue if it has not started; its model call, if running, finishes
     * and its outputs are let go. Counted in {@code requests} only.
     */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        if (!settled.compareAndSet(false, true)) {
            return isCancelled();
        }
        owner.drop(this);
        countSettled();
        super.cancel(mayInterruptIfRunning);
        done();
        return true;
    }

    /**
     * Completes the future from outside ({@code completeOnTimeout} included): the request is settled
     * as a cancel is, and a later answer is let go.
     */
    @Override
    public boolean complete(A value) {
        if (!settled.compareAndSet(false, true)) {
            return false;
        }
        owner.drop(this);
        countSettled();
        boolean completed = super.complete(value);
        done();
        return completed;
    }

    /**
     * Fails the future from outside ({@code orTimeout} included): the request is settled as a cancel
     * is, and a later answer is let go.
     */
    @Override
    public boolean completeExceptionally(Throwable ex) {
        Objects.requireNonNull(ex, "ex");
        if (!settled.compareAndSet(false, true)) {
            return false;
        }
        owner.drop(this);
        countSettled();
        boolean completed = super.completeExceptionally(ex);
        done();
        return completed;
    }

    /**
     * Settled: it no longer counts as in flight or as a call that joined a batch. Counted before the
     * future completes, so that a caller woken by the answer (and its next call) sees the counts
     * without the request it just got, as do the looks and announced batches that read them.
     */
    private void countSettled() {
        if (claimed) {
            owner.unclaim();
        }
        owner.settled();
    }

    /** Settled and completed: the deadline's timer goes, and the request's hold of its inputs. */
    private void done() {
        Future<?> t = timer;
        if (t != null) {
            t.cancel(false);
        }
        release();
    }
}
