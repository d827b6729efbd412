package io.github.dlpack4j.python.interpreter;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The shutdown state of the process's interpreter: from the JVM's shutdown on (or a host's exit,
 * {@link HostedJvmExit}), Python references are left alone, to the process's end, since Python may
 * be tearing down too; and the GIL holds that dlpack4j takes on its own account are waited for, so
 * that the JVM never stops one of its threads while it holds the GIL.
 */
public final class Shutdown {
    private static volatile boolean shuttingDown;
    /** GIL holds that dlpack4j takes on its own account, in progress now. */
    private static final AtomicInteger INTERNAL_HOLDS = new AtomicInteger();

    private Shutdown() {}

    /** {@return whether the JVM is shutting down (or the host let go of it): references are then left to the process's end} */
    public static boolean isShuttingDown() {
        return shuttingDown;
    }

    /** From a host's exit on ({@link HostedJvmExit}): like the JVM's own shutdown, references are left alone. */
    static void markHostExit() {
        shuttingDown = true;
    }

    /**
     * Installs the JVM shutdown hook, once per process.
     *
     * @param embedded this JVM started the interpreter, and its exit ends the process
     */
    static void installHook(boolean embedded) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            shuttingDown = true;
            if (embedded) {
                EmbeddedPythonExit.checkGilAtExit(); // every thread that may hold the GIL, ours included
                return;
            }
            // The JVM stops every thread where it is once the hooks are done: none of ours may be
            // holding the GIL then (see enterInternalHold). Holds are short; five seconds is a bound.
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (INTERNAL_HOLDS.get() != 0 && System.nanoTime() - deadline < 0) {
                LockSupport.parkNanos(1_000_000L);
            }
        }, "dlpack4j-python-shutdown"));
    }

    /**
     * Begins a GIL hold that dlpack4j takes on its own account (the release flusher; a close that
     * runs queued deleters past the queue's bound), or says no once the JVM's shutdown began. The
     * shutdown hook waits for such holds to end: a thread stopped by the JVM's exit while it holds
     * the GIL would hang the host's Python. (A JVM that embeds Python waits, with a bound, for every
     * thread that takes the GIL through dlpack4j, these included: {@link EmbeddedPythonExit}.)
     * The count is raised before the flag is read and the hook sets the flag before it reads the
     * count, so one of the two always sees the other.
     *
     * @return whether the hold may begin; if so, {@link #exitInternalHold()} must follow
     */
    static boolean enterInternalHold() {
        INTERNAL_HOLDS.incrementAndGet();
        if (shuttingDown) {
            INTERNAL_HOLDS.decrementAndGet();
            return false;
        }
        return true;
    }

    /** Ends a hold begun by {@link #enterInternalHold()}. */
    static void exitInternalHold() {
        INTERNAL_HOLDS.decrementAndGet();
    }
}
