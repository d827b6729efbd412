package io.github.dlpack4j.python;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.LockSupport;

/**
 * References released by threads that do not hold the GIL, applied by the next thread that takes it
 * (as PyO3's reference pool does). Closing a {@code PyObject} then costs no GIL round trip, and the
 * cleaner thread never waits for a GIL that a long Python computation holds. A daemon thread takes
 * the GIL to apply them when nobody else called Python in the last 20 ms.
 */
final class PendingDecrefs {
    private static final long FLUSH_DELAY_NANOS = 20_000_000L;
    private static final Object LOCK = new Object();
    private static long[] items = new long[256];
    private static int size;
    /** The array the last drain emptied, reused by the next one; only a GIL holder touches it. */
    private static long[] spare = new long[256];
    private static volatile boolean nonEmpty;
    private static final Thread FLUSHER = Thread.ofPlatform().daemon().name("dlpack4j-python-decref").unstarted(PendingDecrefs::flushLoop);

    static {
        FLUSHER.start();
    }

    private PendingDecrefs() {}

    /** Queues a decref of the object at {@code address}. */
    static void add(long address) {
        synchronized (LOCK) {
            if (size == items.length) {
                items = java.util.Arrays.copyOf(items, size * 2);
            }
            items[size++] = address;
            nonEmpty = true;
        }
    }

    /** Applies every queued decref; the caller holds the GIL. */
    static void drain() {
        if (!nonEmpty || Python.isShuttingDown()) {
            return;
        }
        long[] batch;
        int n;
        synchronized (LOCK) {
            batch = items;
            n = size;
            items = spare;
            size = 0;
            nonEmpty = false;
        }
        // Only one thread drains at a time (it holds the GIL), so the batch is ours alone.
        for (int i = 0; i < n; i++) {
            Py.decRef(MemorySegment.ofAddress(batch[i]));
        }
        spare = batch;
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
