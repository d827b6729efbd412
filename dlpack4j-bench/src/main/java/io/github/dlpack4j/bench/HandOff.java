package io.github.dlpack4j.bench;

import java.util.concurrent.locks.LockSupport;

/**
 * The floor of a virtual thread's call that must run on a platform thread: the bare hand-off of a
 * task to one platform thread of its own and the wait for its end, with none of a model runtime's
 * queue, counters or futures. One caller at a time; the slot is one volatile field each way.
 *
 * <p>With {@code spin}, each side looks for the other a while before it parks, as dlpack4j-model
 * does ({@code Look}): the platform thread for the next task, the caller for the task's end, each
 * for at most {@link #SPIN_NANOS}. Without, both park at once, and every call pays two wake-ups (the
 * platform thread's, and the virtual thread's through its scheduler and a carrier). A side unparks
 * the other only when that one said it parks (its flag, then the slot checked again: no lost
 * wake-up).
 */
final class HandOff implements AutoCloseable {
    /** How long a side looks before it parks: the runtime's look. */
    static final long SPIN_NANOS = 50_000;

    private final boolean spin;
    private final Thread worker;
    private volatile Runnable task;
    private volatile boolean done;
    private volatile Thread caller;
    private volatile boolean callerParked;
    private volatile boolean workerParked;
    private volatile boolean closed;

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
        if (spin) {
            long until = System.nanoTime() + SPIN_NANOS;
            for (int i = 1; !done; i++) {
                if ((i & 31) == 0 && System.nanoTime() - until >= 0) {
                    break;
                }
                Thread.onSpinWait();
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
                    for (int i = 1; task == null && !closed; i++) {
                        if ((i & 31) == 0 && System.nanoTime() - until >= 0) {
                            break;
                        }
                        Thread.onSpinWait();
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
            work.run();
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

    /** Busy work of about {@code nanos} on this thread (a model's run without Python), then returns. */
    static void busy(long nanos) {
        long until = System.nanoTime() + nanos;
        while (System.nanoTime() - until < 0) {
            Thread.onSpinWait();
        }
    }
}
