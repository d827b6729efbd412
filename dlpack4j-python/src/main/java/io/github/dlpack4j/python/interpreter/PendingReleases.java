package io.github.dlpack4j.python.interpreter;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * Work that needs the GIL, left by threads that do not hold it and done by the next thread that
 * takes it (as PyO3's reference pool does): reference drops ({@code PyObject.close()}, the cleaner)
 * and other packages' work, such as the deleters of tensors that Python producers made. Closing costs no
 * GIL round trip, and the cleaner thread never waits for a GIL that a long Python computation holds.
 * A daemon thread takes the GIL to do it when nobody else called Python in the last 20 ms.
 *
 * <p>The queue is a lock-free stack of the release objects themselves (a {@code PyObject}'s
 * cleaning action, an import's deleter): queueing is one compare-and-set and
 * allocates nothing, and a drain takes the whole stack with one swap, so drains never share
 * anything, even when a decref runs Python code that calls Java back or lets another thread take
 * the GIL.
 *
 * <p>Deleters are bounded, since each holds a producer's memory: when the queued ones would hold more
 * than {@link #MAX_DELETER_BYTES} or number more than {@link #MAX_DELETERS}, {@link #deferDeleter}
 * refuses and the closing thread takes the GIL itself (running the queued ones too), so a loop
 * over large tensors never piles memory up.
 */
public final class PendingReleases {
    /** The most bytes of tensor memory that queued deleters may hold. */
    public static final long MAX_DELETER_BYTES = 64L << 20;
    /** The most deleters queued (tensors whose bytes are counted low, slices of a large array, still hold memory). */
    public static final int MAX_DELETERS = 256;
    private static final long FLUSH_DELAY_NANOS = 20_000_000L;
    /** Empty looks in a row (a second's worth) after which the flusher parks until something is queued. */
    private static final int IDLE_LOOKS = 50;
    private static final VarHandle HEAD;
    private static final Thread FLUSHER = Thread.ofPlatform().daemon().name("dlpack4j-python-release").unstarted(PendingReleases::flushLoop);

    /**
     * Set by the flusher before it parks for good, so that a process with nothing queued uses no
     * CPU; the first thing queued after it wakes it. Read only by a push onto an empty queue.
     */
    private static volatile boolean flusherAsleep;

    /** The top of the stack; null when nothing is queued. */
    @SuppressWarnings("unused") // through HEAD
    private static volatile Node head;

    static {
        try {
            HEAD = MethodHandles.lookup().findStaticVarHandle(PendingReleases.class, "head", Node.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
        FLUSHER.start();
    }

    private PendingReleases() {}

    /**
     * Something to do with the GIL held, queued at most once. Each node carries the totals of the
     * deleters at and below it, so that the head alone tells what the queue holds.
     */
    public abstract static class Node {
        /** A node not queued yet. */
        protected Node() {}

        private Node next;
        private int deletersBelow;
        private long bytesBelow;

        /** Does it; the GIL is held. */
        protected abstract void release();
    }

    /** Queues a release that holds no tensor memory (a decref). */
    public static void defer(Node n) {
        Node h;
        do {
            h = head;
            n.next = h;
            n.deletersBelow = h == null ? 0 : h.deletersBelow;
            n.bytesBelow = h == null ? 0 : h.bytesBelow;
        } while (!HEAD.compareAndSet(h, n));
        if (h == null) {
            wakeAsleepFlusher();
        }
    }

    /** After a push onto an empty queue: wakes the flusher if it parked for good (once, not per push). */
    private static void wakeAsleepFlusher() {
        if (flusherAsleep) {
            flusherAsleep = false;
            LockSupport.unpark(FLUSHER);
        }
    }

    /**
     * Queues a producer's deleter for tensor memory of {@code bytes}, unless the queue would then pass
     * a bound: false then, and the caller runs it holding the GIL. {@code evenOverTheBound} queues it
     * anyway (a virtual thread, which may not take the GIL) and wakes the flusher.
     */
    public static boolean deferDeleter(Node n, long bytes, boolean evenOverTheBound) {
        Node h;
        boolean over;
        do {
            h = head;
            int deleters = (h == null ? 0 : h.deletersBelow) + 1;
            long held = (h == null ? 0 : h.bytesBelow) + bytes;
            over = deleters > MAX_DELETERS || held > MAX_DELETER_BYTES;
            if (over && !evenOverTheBound) {
                return false;
            }
            n.next = h;
            n.deletersBelow = deleters;
            n.bytesBelow = held;
        } while (!HEAD.compareAndSet(h, n));
        if (over) {
            LockSupport.unpark(FLUSHER);
        } else if (h == null) {
            wakeAsleepFlusher();
        }
        return true;
    }

    /** The bytes that queued deleters hold now. */
    public static long pendingDeleterBytes() {
        Node h = head;
        return h == null ? 0 : h.bytesBelow;
    }

    /** The number of deleters queued now. */
    public static int pendingDeleters() {
        Node h = head;
        return h == null ? 0 : h.deletersBelow;
    }

    /**
     * Does everything queued so far; the caller holds the GIL. A release that throws is reported and
     * the others still run.
     */
    public static void drain() {
        if (head == null || Shutdown.isShuttingDown()) {
            return;
        }
        for (Node n = (Node) HEAD.getAndSet((Node) null); n != null; ) {
            Node next = n.next;
            n.next = null;
            try {
                n.release();
            } catch (Throwable t) {
                System.err.println("dlpack4j: error in a release run for a thread without the GIL: " + t);
            }
            n = next;
        }
    }

    private static final Runnable NOTHING = () -> { };

    private static void flushLoop() {
        int idle = 0;
        while (true) {
            LockSupport.parkNanos(FLUSH_DELAY_NANOS); // callers usually drain it for free first
            if (head == null && ++idle >= IDLE_LOOKS) {
                // Raised before the queue is read once more, and a push reads it after its own
                // write: a push that this read misses sees the flag and wakes the flusher.
                flusherAsleep = true;
                if (head == null) {
                    LockSupport.park(PendingReleases.class);
                }
                flusherAsleep = false;
                idle = 0;
            }
            if (head != null) {
                idle = 0;
                try {
                    Gil.runOwnHold(NOTHING); // taking the GIL drains
                } catch (Throwable t) {
                    // Never let the flusher die; the next caller drains instead.
                }
            }
        }
    }
}
