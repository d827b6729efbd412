package io.github.dlpack4j.model;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Function;


/**
 * A model's queue: admission (bounded, refusing at once when full or closed), deadlines, and the
 * batches its workers take. Callbacks of a request's future never run under the queue's lock.
 */
final class Scheduler {
    /**
     * One timer thread for the deadlines of every model in the JVM; a done request's timer is
     * removed. It only hands each expiry to a virtual thread of its own: a future's callbacks run
     * there, and one that blocks holds up no other deadline.
     */
    private static final ScheduledThreadPoolExecutor DEADLINES = deadlines();
    /** The threads that time requests out, and run the callbacks of their futures. */
    private static final ThreadFactory EXPIRIES = Thread.ofVirtual().name("dlpack4j-model-deadline").factory();

    private final String name;
    private final Recorder recorder;
    /** The idle workers' look at the queue ({@link #lookForWork()}). */
    private final Look look = new Look();
    private final BooleanSupplier workOrClose = () -> this.queued > 0 || this.closed;
    private final int maxQueue;
    /** The most rows a batch stacks; 0 without batching. */
    private final long maxBatchRows;
    private final long maxDelayNanos;
    private final long timeoutNanos;

    private final ReentrantLock lock = new ReentrantLock();
    /** Workers with no batch wait here. */
    private final Condition idle = lock.newCondition();
    /** Workers gathering a batch wait here for more requests, until the batch's delay is over. */
    private final Condition gathering = lock.newCondition();
    private final ArrayDeque<Request<?>> queue = new ArrayDeque<>();
    /** The queue's size, written under the lock, read without it by {@link #nothingQueued()}. */
    private volatile int queued;
    /** Workers gathering a batch: written under the lock, read without it by {@link #unannounce()}. */
    private volatile int gatherers;
    /** The rows of the requests in the queue; under the lock. */
    private long queuedRows;
    /**
     * The rows a lone gatherer's batch lacks to be full, set before it waits (0, unknown, once a
     * gatherer leaves: the one left, if any, may lack fewer); under the lock.
     */
    private long gatherLacks;
    private volatile boolean closed;
    /** Calls announced ({@link PythonModel#announce()}) and not yet done with. */
    private final AtomicInteger announced = new AtomicInteger();
    /** Requests taken into batches (gathering or running) and not settled yet. */
    private final AtomicInteger claimed = new AtomicInteger();
    /** Requests admitted and not settled yet. */
    private final AtomicInteger inFlight = new AtomicInteger();
    /**
     * An idle worker looks at the queue ({@link #lookForWork()}) and takes the lock next: the next
     * request admitted needs no parked worker woken. Set by the looker; cleared by that admission
     * (under the lock) or by the looker when it stops looking.
     */
    private volatile boolean lookerComing;

    Scheduler(String name, Recorder recorder, int maxQueue, long maxBatchRows, long maxDelayNanos, long timeoutNanos) {
        this.name = name;
        this.recorder = recorder;
        this.maxQueue = maxQueue;
        this.maxBatchRows = maxBatchRows;
        this.maxDelayNanos = maxDelayNanos;
        this.timeoutNanos = timeoutNanos;
    }

    private static ScheduledThreadPoolExecutor deadlines() {
        ScheduledThreadPoolExecutor e = new ScheduledThreadPoolExecutor(1,
                Thread.ofPlatform().name("dlpack4j-model-deadlines").daemon(true).factory());
        e.setRemoveOnCancelPolicy(true);
        return e;
    }

    /**
     * {@return the timer of an action run {@code nanos} from now on a virtual thread of its own,
     * on the one deadline thread of the JVM} Cancel it once the action is not needed.
     */
    static java.util.concurrent.Future<?> later(Runnable action, long nanos) {
        return DEADLINES.schedule(() -> EXPIRIES.newThread(action).start(), nanos, TimeUnit.NANOSECONDS);
    }

    String name() {
        return name;
    }

    Recorder recorder() {
        return recorder;
    }

    boolean batching() {
        return maxBatchRows > 0;
    }

    /**
     * Queues a request and returns it.
     *
     * @param inputs the request's own handles of the call's inputs: the request closes them, and so
     *               does this method if it throws
     * @throws ModelOverloadedException if {@code maxQueue} requests wait already
     * @throws IllegalStateException    if the model is closed
     */
    <A> Request<A> admit(List<Object> inputs, long rows, long listRows, String key, Function<ModelResult, A> shape) {
        Request<A> r = new Request<>(this, inputs, rows, listRows, key, shape, System.nanoTime(), timeoutNanos);
        lock.lock();
        try {
            if (closed || queue.size() >= maxQueue) {
                r.release();
            }
            if (closed) {
                throw new IllegalStateException("model " + name + " is closed");
            }
            if (queue.size() >= maxQueue) {
                recorder.rejected(maxQueue);
                throw new ModelOverloadedException("model " + name + ": " + maxQueue + " requests wait already "
                        + "(maxQueue); try again later");
            }
            queue.addLast(r);
            queued = queue.size();
            queuedRows += r.rows;
            recorder.admitted();
            inFlight.incrementAndGet();
            if (gatherers > 0) {
                if (gatherers > 1 || queuedRows >= gatherLacks || everyAnnouncedCallQueuedOrClaimed()) {
                    gathering.signalAll();
                }
            } else if (lookerComing) {
                lookerComing = false; // the looking worker polls the queue after its look, under this lock
            } else {
                idle.signal();
            }
        } finally {
            lock.unlock();
        }
        if (r.hasDeadline) {
            r.timer = DEADLINES.schedule(() -> EXPIRIES.newThread(() -> expire(r)).start(), timeoutNanos, TimeUnit.NANOSECONDS);
            if (r.isDone()) { // done before its timer was set: nothing else removes it
                r.timer.cancel(false);
            }
        }
        return r;
    }

    /**
     * Before a worker with nothing to do parks, it looks at the queue a moment ({@link Look}): a
     * call that comes meanwhile (the next request of a caller answered a moment ago) is taken
     * without waking a parked thread. Only while no request is in flight: with others in flight
     * their callers and the other workers have the cores' work, and a spinning thread takes a core
     * from them (the serving example lost a third of its requests/s at 8 connections to it). For a
     * {@linkplain Recorder#quickModel() quick model} it looks even after misses in a row: its lone
     * callers look for their answers, and a caller that gave up and parked comes back late, so
     * misses here would follow from theirs, and both sides would park for good (a virtual thread
     * in a loop of mlp calls: +34 µs a call over a platform thread, against +2 µs for the bare
     * hand-off, {@code ModelBench}). Never with batching: a batch waits for company anyway, so a
     * wake-up costs it nothing it would notice, while under a closed loop of callers (a served
     * model) every batch's answers leave nothing in flight for a moment, and the worker's look
     * between batches took about half its thread's time and CPU the callers needed.
     */
    private void lookForWork() {
        if (!batching() && queued == 0 && inFlight.get() == 0) {
            lookerComing = true;
            try {
                look.lookFor(workOrClose, recorder.quickModel());
            } finally {
                lookerComing = false;
            }
        }
    }

    /** {@return the queue's size now, read without the lock} */
    int queued() {
        return queued;
    }

    /** {@return whether no request waits in the queue (a moment's view, read without the lock)} */
    boolean nothingQueued() {
        return queued == 0;
    }

    /** A call is on its way: a batch gathering waits for it (within its delay). */
    void announce() {
        announced.incrementAndGet();
    }

    /** An announced call is done with: a batch that waited for it may run now. */
    void unannounce() {
        announced.decrementAndGet();
        // read after the decrement: a gatherer that checks meanwhile sees the new count itself
        if (gatherers > 1 || gatherers > 0 && everyAnnouncedCallQueuedOrClaimed()) {
            lock.lock();
            try {
                gathering.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * {@return whether calls are announced and each is in the queue or a batch (a moment's view)}:
     * only then can a lone gatherer's wait for every announced call end, so only then does a
     * request's admission or an announced call's end wake it ({@link #gather}). Each wake-up of a
     * gatherer costs a futex wake and a context switch, which under a closed loop of callers came
     * about once for every few requests.
     */
    private boolean everyAnnouncedCallQueuedOrClaimed() {
        int a = announced.get();
        return a > 0 && claimed.get() + queued >= a;
    }

    /** {@return whether calls are announced and every one of them has joined a batch} */
    private boolean everyAnnouncedCallClaimed() {
        int a = announced.get();
        return a > 0 && claimed.get() >= a;
    }

    /** The deadline of {@code r} passed: out of the queue if it waits there, and failed (unless settled). */
    void expire(Request<?> r) {
        drop(r);
        r.timeOut(System.nanoTime());
    }

    /** Removes {@code r} from the queue, if it waits there. */
    void drop(Request<?> r) {
        lock.lock();
        try {
            if (queue.remove(r)) {
                queued = queue.size();
                queuedRows -= r.rows;
            } else if (gatherers > 0 && r.claimed) { // it may be in a batch that gathers: it leaves it
                gathering.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** A request taken into a batch is settled: it no longer counts as a call that joined one. */
    void unclaim() {
        claimed.decrementAndGet();
    }

    /** An admitted request is settled. */
    void settled() {
        inFlight.decrementAndGet();
    }

    /** {@return the requests admitted and not settled yet (a moment's view)} */
    int inFlight() {
        return inFlight.get();
    }

    /**
     * The next batch for a worker: waits for a first request, then, with batching, gathers the
     * waiting requests of the same {@linkplain Signature#batchKey key} in arrival order up to
     * {@code maxBatchRows} rows, until the batch is full or {@code maxDelay} has passed since its
     * first request arrived, or until every {@linkplain #announce() announced} call has joined a
     * batch. A first request with {@code maxBatchRows} rows or more runs alone. A request settled
     * while its batch gathers (cancelled, timed out) leaves it: its rows go to the requests behind
     * it, and the delay counts from the first request still waiting.
     *
     * An interrupt of the worker is let go: only {@link #close()} stops it.
     *
     * @return the requests, in arrival order; null once the model is closed and its queue empty
     */
    List<Request<?>> next() {
        lookForWork();
        lock.lock();
        try {
            while (true) {
                Request<?> first;
                while ((first = queue.pollFirst()) == null) {
                    if (closed) {
                        return null;
                    }
                    idle.awaitUninterruptibly(); // only close stops a worker
                }
                queued = queue.size();
                queuedRows -= first.rows;
                List<Request<?>> batch = new ArrayList<>();
                claim(batch, first);
                if (!batching() || first.rows >= maxBatchRows) {
                    return batch;
                }
                gather(batch);
                if (!batch.isEmpty()) {
                    return batch;
                }
                // every request of the batch was settled while it gathered: wait for the next one
            }
        } finally {
            lock.unlock();
        }
    }

    /** Takes {@code r} into {@code batch}; the lock is held. */
    private void claim(List<Request<?>> batch, Request<?> r) {
        batch.add(r);
        r.claimed = true;
        claimed.incrementAndGet();
        if (gatherers > 0) { // a batch that waits for every announced call may have all of them now
            gathering.signalAll();
        }
    }

    /** Gathers requests into {@code batch} (of one request), as {@link #next()} says; the lock is held. */
    private void gather(List<Request<?>> batch) {
        gatherers++;
        try {
            while (true) {
                batch.removeIf(Request::settled);
                if (batch.isEmpty()) {
                    return;
                }
                Request<?> first = batch.getFirst();
                long rows = 0;
                for (Request<?> r : batch) {
                    rows += r.rows;
                }
                for (Iterator<Request<?>> it = queue.iterator(); it.hasNext() && rows < maxBatchRows; ) {
                    Request<?> r = it.next();
                    if (r.key.equals(first.key) && rows + r.rows <= maxBatchRows) {
                        it.remove();
                        queued = queue.size();
                        queuedRows -= r.rows;
                        claim(batch, r);
                        rows += r.rows;
                    }
                }
                long left = first.admitted + maxDelayNanos - System.nanoTime();
                if (rows >= maxBatchRows || left <= 0 || closed || everyAnnouncedCallClaimed()) {
                    return;
                }
                if (!queue.isEmpty()) { // requests this batch cannot take: another worker may
                    idle.signal();
                }
                gatherLacks = maxBatchRows - rows; // what a lone gatherer waits for, besides its delay
                try {
                    gathering.awaitNanos(left);
                } catch (InterruptedException e) {
                    // only close stops a worker, and the requests it gathered are its to answer
                }
            }
        } finally {
            gatherers--;
            // the lack written last may be this batch's, not the one left gathering: unknown until
            // that one waits again, so the next admission wakes it
            gatherLacks = 0;
            if (!queue.isEmpty()) {
                idle.signal();
            }
        }
    }

    /** Stops admitting; the workers answer the requests queued and stop. */
    void close() {
        lock.lock();
        try {
            closed = true;
            idle.signalAll();
            gathering.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** {@return the requests still queued, removed from the queue: the close waited long enough} */
    List<Request<?>> drain() {
        lock.lock();
        try {
            List<Request<?>> left = new ArrayList<>(queue);
            queue.clear();
            queued = 0;
            queuedRows = 0;
            return left;
        } finally {
            lock.unlock();
        }
    }
}
