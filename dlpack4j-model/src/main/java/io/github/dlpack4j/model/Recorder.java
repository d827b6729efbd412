package io.github.dlpack4j.model;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/** Where a model's work is counted: its {@link ModelStats} and its JDK Flight Recorder events. */
final class Recorder {
    private final String model;
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong answered = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private final AtomicLong timedOut = new AtomicLong();
    private final AtomicLong batches = new AtomicLong();
    private final AtomicInteger largestBatchRows = new AtomicInteger();
    private final Latency queueWait = new Latency();
    private final Latency run = new Latency();
    private final AtomicLong streamItems = new AtomicLong();
    private final Latency firstItem = new Latency();
    private final ModelListener listener;
    /**
     * How long the model's quick calls take (ns; racy, a hint for the {@link Look looks}): it drops
     * at once to a shorter call and rises by at most a sixteenth of itself per longer one, so rare
     * slow calls (a collection, the machine busy) barely move it, and a model whose calls all became
     * slow passes {@link #QUICK_NANOS} within tens of calls. Measured on the thread that ran the call,
     * it does not depend on how the callers wait. {@link Long#MAX_VALUE} before the first call.
     */
    private volatile long quickRun = Long.MAX_VALUE;

    Recorder(String model, ModelListener listener) {
        this.model = model;
        this.listener = listener;
    }

    /** Tells the listener, whose failure is dropped: it must not fail the model's work. */
    private void tell(Consumer<ModelListener> what) {
        if (listener != null) {
            try {
                what.accept(listener);
            } catch (RuntimeException e) {
                // dropped, as ModelListener says
            }
        }
    }

    void admitted() {
        requests.incrementAndGet();
    }

    void answered() {
        answered.incrementAndGet();
        tell(ModelListener::answered);
    }

    void failed() {
        failed.incrementAndGet();
        tell(ModelListener::failed);
    }

    void rejected(int maxQueue) {
        rejected.incrementAndGet();
        tell(ModelListener::rejected);
        ModelEvents.Rejected e = new ModelEvents.Rejected();
        if (e.shouldCommit()) {
            e.model = model;
            e.maxQueue = maxQueue;
            e.commit();
        }
    }

    void timedOut(boolean running, long waitedNanos) {
        timedOut.incrementAndGet();
        tell(ModelListener::timedOut);
        ModelEvents.TimedOut e = new ModelEvents.TimedOut();
        if (e.shouldCommit()) {
            e.model = model;
            e.running = running;
            e.waited = waitedNanos;
            e.commit();
        }
    }

    /** A request's model call starts {@code nanos} after its admission. */
    void waited(long nanos) {
        queueWait.record(nanos);
        if (listener != null) { // no lambda made on the hot path without a listener
            tell(l -> l.waited(nanos));
        }
    }

    /**
     * One model call ran.
     *
     * @param event    the call's event, begun when the call started
     * @param rows     its rows
     * @param requests the requests it answers
     * @param longestWait the longest queue wait among them
     * @param runNanos how long the call took
     * @param ok       whether it gave outputs that passed the checks
     */
    void batch(ModelEvents.Batch event, long rows, int requests, long longestWait, long runNanos, boolean ok) {
        batches.incrementAndGet();
        largestBatchRows.accumulateAndGet((int) Math.min(rows, Integer.MAX_VALUE), Math::max);
        run.record(runNanos);
        long q = quickRun;
        quickRun = runNanos < q ? runNanos : q + Math.min(runNanos - q, q) / 16;
        if (listener != null) {
            tell(l -> l.ran(rows, runNanos));
        }
        if (event.shouldCommit()) {
            event.model = model;
            event.rows = rows;
            event.requests = requests;
            event.queueWait = longestWait;
            event.runTime = runNanos;
            event.failed = !ok;
            event.commit();
        }
    }

    /**
     * The run time under which a model counts as {@linkplain #quickModel() quick}: four looks'
     * time. When both sides park, a call pays two wake-ups (the worker's and the caller's): on the
     * project's VM +16 to +28 µs for a no-op task and +65 to +76 µs for one as long as the mlp's
     * call ({@code ModelBench}'s floor line), a large part of any call this short. The bound was a
     * look's time (50 µs) until the serving example's mlp crossed it on slow days of the machine
     * (the estimate here 53-120 µs in some rounds): then neither side looked and every call of a
     * virtual thread paid both wake-ups, +49 to +60 µs over a platform thread's
     * (docs/performance.md). The price: a lone caller of a model of 50-200 µs spins (yielding its
     * CPU between glances) for about the whole call.
     */
    static final long QUICK_NANOS = 4 * Look.NANOS;

    /**
     * {@return whether the model's quick calls take less than {@link #QUICK_NANOS}: then a lone
     * caller looks for its answer, and an idle worker for the next request, before they park}
     */
    boolean quickModel() {
        return quickRun < QUICK_NANOS;
    }

    /**
     * {@return how long a lone caller of a {@linkplain #quickModel() quick model} looks for its
     * answer: {@link Look#NANOS} more than twice the model's quick run time} Its answer comes that
     * run time after the call starts, plus the hand-offs; a look of {@link Look#NANOS} alone missed
     * whenever a loaded machine stretched a call near it, and after 16 misses the caller parked on
     * every call, each then costing a wake-up (docs/performance.md).
     */
    long answerLookNanos() {
        long q = quickRun;
        return q >= QUICK_NANOS ? Look.NANOS : Look.NANOS + 2 * q;
    }

    /**
     * A stream ended (counted as answered, failed or timed out by its caller).
     *
     * @param items          the items its subscriber got
     * @param firstItemNanos from admission to its first item; -1 if none came
     * @param outcome        how it ended, for its JFR event
     */
    void streamEnded(long items, long firstItemNanos, String outcome) {
        streamItems.addAndGet(items);
        if (firstItemNanos >= 0) {
            firstItem.record(firstItemNanos);
        }
        ModelEvents.Stream e = new ModelEvents.Stream();
        if (e.shouldCommit()) {
            e.model = model;
            e.items = items;
            e.firstItem = firstItemNanos;
            e.outcome = outcome;
            e.commit();
        }
    }

    ModelStats stats() {
        return new ModelStats(requests.get(), answered.get(), failed.get(), rejected.get(), timedOut.get(),
                batches.get(), largestBatchRows.get(), queueWait.percentile(0.5), queueWait.percentile(0.99),
                run.percentile(0.5), run.percentile(0.99), streamItems.get(), firstItem.percentile(0.5),
                firstItem.percentile(0.99));
    }
}
