package io.github.dlpack4j.python;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.concurrent.locks.LockSupport;

/**
 * Work that needs the GIL, left by threads that do not hold it and done by the next thread that
 * takes it (as PyO3's reference pool does): reference drops ({@code PyObject.close()}, the cleaner)
 * and the deleters of Python producers' tensors ({@link ProducerDeleter}). Closing then costs no
 * GIL round trip, and the cleaner thread never waits for a GIL that a long Python computation holds.
 * A daemon thread takes the GIL to do it when nobody else called Python in the last 20 ms.
 *
 * <p>Deleters are bounded, since each holds a producer's memory: when the queued ones would hold more
 * than {@link #MAX_DELETER_BYTES} or number more than {@link #MAX_DELETERS}, {@link #deferDeleter}
 * refuses and the closing thread takes the GIL itself (running the queued ones too), so a loop
 * over large tensors never piles memory up.
 */
final class PendingReleases {
    /** The most bytes of tensor memory that queued deleters may hold. */
    static final long MAX_DELETER_BYTES = 64L << 20;
    /** The most deleters queued (tensors whose bytes are counted low, slices of a large array, still hold memory). */
    static final int MAX_DELETERS = 256;
    private static final long FLUSH_DELAY_NANOS = 20_000_000L;
    private static final Object LOCK = new Object();
    private static long[] decrefs = new long[256];
    private static int decrefCount;
    private static Runnable[] deleters = new Runnable[MAX_DELETERS];
    private static int deleterCount;
    private static long deleterBytes;
    /** The arrays the last drain emptied, reused by the next one; only the draining thread touches them. */
    private static long[] spareDecrefs = new long[256];
    private static Runnable[] spareDeleters = new Runnable[MAX_DELETERS];
    private static volatile boolean nonEmpty;
    /**
     * Set while a thread drains: a decref may run Python code ({@code __del__}) that calls Java back on
     * the same thread, or lets another thread take the GIL; neither may start a second drain over
     * the arrays the first one is using. Read and written only with the GIL held.
     */
    private static volatile boolean draining;
    private static final Thread FLUSHER = Thread.ofPlatform().daemon().name("dlpack4j-python-release").unstarted(PendingReleases::flushLoop);

    static {
        FLUSHER.start();
    }

    private PendingReleases() {}

    /** Queues a decref of the object at {@code address}. */
    static void decref(long address) {
        synchronized (LOCK) {
            if (decrefCount == decrefs.length) {
                decrefs = Arrays.copyOf(decrefs, decrefCount * 2);
            }
            decrefs[decrefCount++] = address;
            nonEmpty = true;
        }
    }

    /**
     * Queues a producer's deleter for tensor memory of {@code bytes}, unless the queue would then pass
     * a bound: false then, and the caller runs it holding the GIL. {@code evenOverTheBound} queues it
     * anyway (a virtual thread, which may not take the GIL) and wakes the flusher.
     */
    static boolean deferDeleter(Runnable deleter, long bytes, boolean evenOverTheBound) {
        synchronized (LOCK) {
            boolean over = deleterCount == MAX_DELETERS || deleterBytes + bytes > MAX_DELETER_BYTES;
            if (over && !evenOverTheBound) {
                return false;
            }
            if (deleterCount == deleters.length) {
                deleters = Arrays.copyOf(deleters, deleterCount * 2);
            }
            deleters[deleterCount++] = deleter;
            deleterBytes += bytes;
            nonEmpty = true;
            if (over) {
                LockSupport.unpark(FLUSHER);
            }
        }
        return true;
    }

    /** The bytes that deleters queued or running hold now. */
    static long pendingDeleterBytes() {
        synchronized (LOCK) {
            return deleterBytes;
        }
    }

    /** The number of deleters queued now. */
    static int pendingDeleters() {
        synchronized (LOCK) {
            return deleterCount;
        }
    }

    /**
     * Does everything queued so far; the caller holds the GIL. A deleter that throws is reported and
     * the others still run.
     */
    static void drain() {
        if (!nonEmpty || draining || Python.isShuttingDown()) {
            return;
        }
        draining = true;
        long[] refs = null;
        Runnable[] dels = null;
        long batchBytes = 0;
        try {
            int nRefs;
            int nDels;
            synchronized (LOCK) {
                refs = decrefs;
                nRefs = decrefCount;
                dels = deleters;
                nDels = deleterCount;
                decrefs = spareDecrefs;
                deleters = spareDeleters;
                decrefCount = 0;
                deleterCount = 0;
                batchBytes = deleterBytes; // still counted until the batch has run
                nonEmpty = false;
            }
            for (int i = 0; i < nRefs; i++) {
                Py.decRef(MemorySegment.ofAddress(refs[i]));
            }
            for (int i = 0; i < nDels; i++) {
                Runnable d = dels[i];
                dels[i] = null;
                try {
                    d.run();
                } catch (Throwable t) {
                    System.err.println("dlpack4j: error in a Python producer's deleter: " + t);
                }
            }
        } finally {
            if (refs != null) { // the emptied arrays are the next drain's spares
                spareDecrefs = refs;
                spareDeleters = dels;
                synchronized (LOCK) {
                    deleterBytes -= batchBytes;
                }
            }
            draining = false;
        }
    }

    private static void flushLoop() {
        while (true) {
            LockSupport.parkNanos(FLUSH_DELAY_NANOS); // callers usually drain it for free first
            if (nonEmpty && !Python.isShuttingDown()) {
                try {
                    Gil.release(Gil.acquire()); // acquire drains
                } catch (Throwable t) {
                    // Never let the flusher die; the next caller drains instead.
                }
            }
        }
    }
}
