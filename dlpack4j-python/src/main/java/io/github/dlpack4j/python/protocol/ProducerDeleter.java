package io.github.dlpack4j.python.protocol;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.internal.TensorDeleter;
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
 * <p>One context ({@link #CONTEXT}) for every import, so that an import makes no object for it: a
 * {@code ProducerDeleter} is the queue's node, made only when a deleter call is queued, and the
 * bound counts the bytes that the call says its tensor holds ({@link TensorDeleter}). If even that
 * node cannot be allocated, a platform thread takes the GIL and runs the call itself.
 */
final class ProducerDeleter extends PendingReleases.Node {
    /** Runs Python producers' deleter calls holding the GIL, or queues them for the next holder. */
    static final Executor CONTEXT = ProducerDeleter::run;

    /** The deleter call that waits in {@link PendingReleases}. */
    private final Runnable due;

    private ProducerDeleter(Runnable due) {
        this.due = due;
    }

    /** Adopts the managed tensor a Python producer made, with its deleter run in {@link #CONTEXT}. */
    static ManagedTensor adopt(long ptr, boolean versioned) {
        return adopt(MemorySegment.ofAddress(ptr), versioned);
    }

    /** {@link #adopt(long, boolean)} of a pointer held as a segment. */
    static ManagedTensor adopt(MemorySegment ptr, boolean versioned) {
        return versioned ? ManagedTensor.adoptVersioned(ptr, CONTEXT) : ManagedTensor.adoptLegacy(ptr, CONTEXT);
    }

    /** {@link #CONTEXT}'s {@code execute}. */
    private static void run(Runnable deleter) {
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
        boolean virtual = Thread.currentThread().isVirtual();
        ProducerDeleter node;
        try {
            node = new ProducerDeleter(deleter);
        } catch (OutOfMemoryError e) {
            if (virtual) {
                throw e; // it may not take the GIL, and nothing is left to queue the call with
            }
            node = null;
        }
        long bytes = deleter instanceof TensorDeleter d ? d.tensorBytes() : 0;
        if (node != null && PendingReleases.deferDeleter(node, bytes, virtual)) {
            return;
        }
        Gil.runOwnHold(deleter); // the queued ones first, then this one; leaked if the JVM is shutting down
    }

    @Override
    protected void release() {
        due.run();
    }
}
