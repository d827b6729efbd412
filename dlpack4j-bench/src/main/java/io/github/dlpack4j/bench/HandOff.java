package io.github.dlpack4j.bench;

import java.util.concurrent.locks.LockSupport;

import io.github.dlpack4j.internal.CpuYield;

/**
 * The floor of a virtual thread's call that must run on a platform thread: the bare hand-off of a
 * task to one platform thread of its own and the wait for its end, with none of a model runtime's
 * queue, counters or futures. One caller at a time; the slot is one volatile field each way.
 *
 * <p>With {@code spin}, each side looks for the other a while before it parks, as dlpack4j-model
 * does ({@code Look}): the platform thread for the next task for at most {@link #SPIN_NANOS}, the
 * caller for the task's end for {@link #SPIN_NANOS} more than twice the last task's run time, or
 * not at all when that run took {@link #QUICK_NANOS} or more (as a lone caller of a quick model
 * looks, without the runtime's estimate that follows the shortest runs), offering its CPU to
 * another thread between glances
 * ({@link CpuYield}). Without, both park at once, and every call pays two wake-ups (the
 * platform thread's, and the virtual thread's through its scheduler and a carrier). A side unparks
 * the other only when that one said it parks (its flag, then the slot checked again: no lost
 * wake-up).
 */
final class HandOff implements AutoCloseable {
    /** How long the platform thread looks for the next task before it parks: the runtime's look. */
    static final long SPIN_NANOS = 50_000;
    /** The run time from which the caller parks at once, as a quick model's bound in the runtime. */
    static final long QUICK_NANOS = 4 * SPIN_NANOS;

    private final boolean spin;
    private final Thread worker;
    private volatile Runnable task;
    private volatile boolean done;
    private volatile Thread caller;
    private volatile boolean callerParked;
    private volatile boolean workerParked;
    private volatile boolean closed;
    /** How long the last task ran on the platform thread. */
    private volatile long lastRunNanos;

    /**
     * Starts the platform thread.
     *
     * @param spin whether both sides look a while before they park
     */
    HandOff(boolean spin) {
        this.spin = spin;
        this.worker = Thread.ofPlatform().daemon(true).name("dlpack4j-bench-handoff").start(this::serve);
    }

    /** Runs {@code work} on the platform thread and returns once it has run; one caller at a time. */
    void call(Runnable work) {
        done = false;
        caller = Thread.currentThread();
        task = work;
        if (workerParked) {
            LockSupport.unpark(worker);
        }
        long last = lastRunNanos;
        if (spin && last < QUICK_NANOS) {
            long until = System.nanoTime() + SPIN_NANOS + 2 * last;
            while (!done && System.nanoTime() - until < 0) {
                CpuYield.pause();
            }
        }
        while (!done) {
            callerParked = true;
            if (!done) {
                LockSupport.park(this);
            }
            callerParked = false;
        }
    }

    private void serve() {
        while (!closed) {
            Runnable work = task;
            if (work == null) {
                if (spin) {
                    long until = System.nanoTime() + SPIN_NANOS;
                    while (task == null && !closed && System.nanoTime() - until < 0) {
                        CpuYield.pause();
                    }
                }
                workerParked = true;
                if (task == null && !closed) {
                    LockSupport.park(this);
                }
                workerParked = false;
                continue;
            }
            task = null;
            long start = System.nanoTime();
            work.run();
            lastRunNanos = System.nanoTime() - start;
            done = true;
            if (callerParked) {
                LockSupport.unpark(caller);
            }
        }
    }

    /** Stops the platform thread. */
    @Override
    public void close() throws InterruptedException {
        closed = true;
        LockSupport.unpark(worker);
        worker.join();
    }

    /** Where {@link #work} leaves its result, so that the JIT keeps the loop. */
    static volatile long sink;

    /**
     * A fixed amount of CPU work: {@code steps} rounds of a xorshift, each depending on the last. A
     * thread that loses its core meanwhile takes longer, as a model's call would (a loop until a
     * deadline would not).
     */
    static void work(long steps) {
        long x = 88172645463325252L;
        for (long i = 0; i < steps; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        sink = x;
    }

    /** {@return the steps of {@link #work} that take about {@code nanos} on this thread (best of five)} */
    static long stepsFor(long nanos) {
        long steps = 100_000;
        for (int i = 0; i < 3; i++) { // warm the loop up before it is timed
            work(steps);
        }
        long best = Long.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
            long start = System.nanoTime();
            work(steps);
            best = Math.min(best, System.nanoTime() - start);
        }
        return Math.max(1, steps * nanos / Math.max(1, best));
    }
}
