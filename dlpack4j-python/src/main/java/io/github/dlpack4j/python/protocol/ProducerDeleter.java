package io.github.dlpack4j.python.protocol;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.python.interpreter.Gil;
import io.github.dlpack4j.python.interpreter.PendingReleases;
import io.github.dlpack4j.python.interpreter.Shutdown;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.Executor;

/**
 * Where the deleter of a tensor that a Python producer made runs (the {@code deleterContext} of
 * {@link ManagedTensor#adoptVersioned(java.lang.foreign.MemorySegment, Executor)}): such deleters may
 * drop Python references, so they run holding the GIL. On a thread that holds it (inside
 * {@link io.github.dlpack4j.python.Python#withGil}, or Java called from Python) the deleter runs at once; so it does on a
 * thread that Python made ({@link Gil#isPythonThread()}: the main thread of a program that hosts the
 * JVM, a {@code threading.Thread}), where JPype let the GIL go around the Java call and takes it
 * back right after, so this thread takes it for the deleter (a Python programmer expects
 * {@code close()} to release the array before it returns). On any other thread (a Java thread) it
 * goes to {@link PendingReleases}, so that {@code close()} never waits for the GIL, and runs at the
 * next GIL acquisition or within 20 ms; past the queue's bound, the closing thread takes the GIL
 * and runs it (with the queued ones) itself. After the JVM's shutdown began it leaks instead.
 *
 * <p>One per import: the bound counts bytes ({@link #adopt} records the tensor's), and the object
 * itself is what waits in the queue, so deferring allocates nothing.
 */
final class ProducerDeleter extends PendingReleases.Node implements Executor {
    /**
     * The tensor's logical size, written once right after adoption. A close that races with that
     * write (an unpublished tensor closed by another thread) may read 0: the bound then counts
     * this tensor as nothing, and the entry bound still applies.
     */
    private long bytes;
    /** The deleter call, kept while it waits in {@link PendingReleases}. */
    private Runnable due;

    /**
     * Adopts the managed tensor a Python producer made, with its deleter run by a new
     * {@code ProducerDeleter}, which records the tensor's size for the queue's byte bound.
     */
    static ManagedTensor adopt(long ptr, boolean versioned) {
        return adopt(MemorySegment.ofAddress(ptr), versioned);
    }

    /** {@link #adopt(long, boolean)} of a pointer held as a segment. */
    static ManagedTensor adopt(MemorySegment ptr, boolean versioned) {
        ProducerDeleter deleter = new ProducerDeleter();
        ManagedTensor m = versioned ? ManagedTensor.adoptVersioned(ptr, deleter) : ManagedTensor.adoptLegacy(ptr, deleter);
        var t = m.tensor();
        deleter.bytes = t.numel() * t.dtype().byteSize();
        return m;
    }

    @Override
    public void execute(Runnable deleter) {
        if (Shutdown.isShuttingDown()) {
            return;
        }
        if (Gil.isHeld()) {
            deleter.run();
            return;
        }
        if (Gil.isPythonThread()) {
            int g = Gil.acquire(); // runs the queued ones too
            try {
                deleter.run();
            } finally {
                Gil.release(g);
            }
            return;
        }
        // A virtual thread may not take the GIL: it queues even past the bound, and wakes the flusher.
        due = deleter;
        if (PendingReleases.deferDeleter(this, bytes, Thread.currentThread().isVirtual())) {
            return;
        }
        due = null;
        Gil.runOwnHold(deleter); // the queued ones first, then this one; leaked if the JVM is shutting down
    }

    @Override
    protected void release() {
        Runnable d = due;
        due = null;
        d.run();
    }
}
