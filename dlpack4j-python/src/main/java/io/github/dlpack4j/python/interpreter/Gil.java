package io.github.dlpack4j.python.interpreter;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The GIL: taken for the duration of one public call, or held for a whole scope
 * ({@link io.github.dlpack4j.python.Python#withGil}) and let go inside one ({@link io.github.dlpack4j.python.Python#allowThreads}).
 *
 * <p>Each OS thread keeps one CPython thread state for its whole life: the first time a thread
 * calls in, it takes {@code PyGILState_Ensure} twice and releases only once, so the state's counter
 * never returns to zero and CPython never destroys it. Later calls pay only for taking and giving
 * back the GIL (about 65 ns a pair here), against several times that when a thread state is made
 * and torn down on every call, which has also crashed other embedders. {@code PyGILState_Ensure}
 * nests: a thread that holds the GIL already (Java code called from Python, a deleter that Python
 * runs) takes it again without waiting, even when native code in between released it.
 *
 * <p>Inside a scope a call skips even the nested Ensure/Release pair (two downcalls with a
 * thread-state transition each): it asks {@code PyGILState_Check}, a critical downcall of a few
 * nanoseconds, whether this thread really holds the GIL, and uses it as it is. The scope count alone
 * is not trusted, because native code called inside a scope may release the GIL and call back into
 * Java (a foreign deleter of one of our exports, a user's own upcall); such a call then takes the
 * GIL the ordinary way, with the same thread state, and gives it back to where it was.
 *
 * <p>A virtual thread never takes the GIL: one may move to another OS thread while it holds it,
 * which would leave CPython's thread state on the wrong thread. {@link #with} and {@link #scope}
 * hand its work to {@link PythonThreads}, as the public methods that take the GIL themselves
 * ({@link #acquire}) do before they do.
 */
public final class Gil {
    /** What {@link #acquire} returns inside a scope: nothing was taken, nothing is given back. */
    private static final int SCOPED = -1; // PyGILState_STATE is 0 (LOCKED) or 1 (UNLOCKED)

    /**
     * Per platform thread: whether dlpack4j keeps its thread state (made and pinned it, or it is the
     * interpreter's first one, made on the thread that ran {@link io.github.dlpack4j.python.Python#start()}), and how many
     * scopes it is in now.
     */
    private static final class PerThread {
        boolean pinned;
        int scopes;
    }

    private static final ThreadLocal<PerThread> THREAD = ThreadLocal.withInitial(PerThread::new);
    /**
     * Java threads between taking the GIL through dlpack4j (waiting included) and giving it back; a
     * thread inside {@link #allowThreads} still counts, since it takes the GIL back at its end.
     */
    private static final AtomicInteger ENTERED = new AtomicInteger();

    private Gil() {}

    /** Takes the GIL (or finds it held by this thread's scope); pass the result to {@link #release}. */
    public static int acquire() {
        PerThread t = THREAD.get();
        if (t.scopes != 0 && isHeld()) {
            PendingReleases.drain(); // other threads' closes run here, not 20 ms later
            return SCOPED;
        }
        return ensure(t);
    }

    private static int ensure(PerThread t) {
        try {
            if (!t.pinned && Thread.currentThread().isVirtual()) {
                // Every entry point hands a virtual thread's work to PythonThreads first.
                throw new IllegalStateException("internal error: a virtual thread reached the GIL (it may change OS "
                        + "threads while holding it); its call should have run on a dlpack4j-python thread");
            }
            enter();
            // The first Ensure takes the GIL (release gives it back); the pin, taken second, only
            // raises the thread state's counter and is never released, so the state stays. A thread
            // state that Python made (a thread Python started) is Python's to keep: never pinned.
            boolean pin = !t.pinned && !hasThreadState();
            int state = (int) CApi.PyGILState_Ensure.invokeExact();
            if (pin) {
                int pinned = (int) CApi.PyGILState_Ensure.invokeExact();
                t.pinned = true;
            }
            PendingReleases.drain();
            return state;
        } catch (Throwable e) {
            throw PyErrors.unchecked(e);
        }
    }

    /** Releases what {@link #acquire} took. */
    public static void release(int state) {
        if (state == SCOPED) {
            return;
        }
        try {
            CApi.PyGILState_Release.invokeExact(state);
        } catch (Throwable e) {
            throw PyErrors.unchecked(e);
        } finally {
            ENTERED.decrementAndGet();
        }
    }

    /**
     * Counts this thread in before it waits for the GIL: from here until it gave the GIL back, a
     * JVM exit would stop it waiting for or holding it ({@link EmbeddedPythonExit}). The count is raised
     * before the exit's flag is read, and the exit sets its flag before it reads the count, so one
     * of the two always sees the other (both are sequentially consistent).
     */
    private static void enter() {
        ENTERED.incrementAndGet();
        EmbeddedPythonExit.checkEntry();
    }

    /** {@return the Java threads that wait for the GIL or hold it through dlpack4j now} */
    public static int entered() {
        return ENTERED.get();
    }

    /**
     * Runs {@code body} holding the GIL on dlpack4j's own account (the release flusher, a close
     * past the release queue's bound), unless the JVM's shutdown began: the shutdown hook waits for
     * such holds, so that the JVM never stops one of our threads holding the GIL
     * ({@link Shutdown#enterInternalHold()}). Taking the GIL runs the queued releases first.
     *
     * @return whether {@code body} ran
     */
    public static boolean runOwnHold(Runnable body) {
        if (!Shutdown.enterInternalHold()) {
            return false;
        }
        try {
            int g = acquire();
            try {
                body.run();
            } finally {
                release(g);
            }
        } finally {
            Shutdown.exitInternalHold();
        }
        return true;
    }

    /** A body run with the GIL held; may call the C API and throw what its downcalls declare. */
    @FunctionalInterface
    public interface Body<T> {
        T run() throws Throwable;
    }

    /**
     * Runs {@code body} holding the GIL, and rethrows what it throws unchecked. For calls off the hot
     * path: the hot ones ({@link io.github.dlpack4j.python.PyObject#call}, {@link io.github.dlpack4j.python.PyObject#invoke}) spell the same out, so
     * that their downcalls are compiled inline.
     */
    public static <T> T with(Body<T> body) {
        if (Thread.currentThread().isVirtual()) {
            return PythonThreads.callUnchecked(() -> with(body));
        }
        int g = acquire();
        try {
            return body.run();
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        } finally {
            release(g);
        }
    }

    /**
     * {@link io.github.dlpack4j.python.Python#withGil(Supplier)}: the GIL for the whole of {@code body}. A nested scope finds
     * it held and only counts; the outermost one gives it back however the body ends.
     */
    public static <T> T scope(Supplier<T> body) {
        if (Thread.currentThread().isVirtual()) {
            return PythonThreads.callUnchecked(() -> scope(body)); // the whole body on one platform thread
        }
        PerThread t = THREAD.get();
        int g = acquire();
        t.scopes++;
        try {
            return body.get();
        } finally {
            t.scopes--;
            release(g);
        }
    }

    /**
     * {@link io.github.dlpack4j.python.Python#allowThreads}: lets the GIL go around {@code body} if this thread holds it, and
     * takes it back with the same thread state after; calls inside take it for themselves, as
     * outside any scope. A thread that does not hold the GIL just runs {@code body}.
     */
    public static void allowThreads(Runnable body) {
        if (!isHeld()) {
            body.run();
            return;
        }
        PerThread t = THREAD.get();
        int scopes = t.scopes;
        MemorySegment saved;
        try {
            saved = (MemorySegment) CApi.PyEval_SaveThread.invokeExact();
        } catch (Throwable e) {
            throw PyErrors.unchecked(e);
        }
        t.scopes = 0;
        try {
            body.run();
        } finally {
            t.scopes = scopes;
            try {
                CApi.PyEval_RestoreThread.invokeExact(saved);
            } catch (Throwable e) {
                throw PyErrors.unchecked(e);
            }
        }
    }

    /**
     * Whether Python made this thread's thread state: a thread that Python started (the main thread
     * of a program that hosts the JVM, a {@code threading.Thread}), or a Java thread running Python
     * code that called back into Java. Python code further down this thread's stack takes the GIL
     * back as soon as the Java code returns, so taking it here adds no wait that was not coming.
     */
    public static boolean isPythonThread() {
        return !THREAD.get().pinned && hasThreadState();
    }

    /** Keeps, as a pin would, the interpreter's first thread state, which {@link io.github.dlpack4j.python.Python#start()} made on this thread. */
    static void keepInitialThreadState() {
        THREAD.get().pinned = true;
    }

    private static boolean hasThreadState() {
        try {
            return ((MemorySegment) CApi.PyGILState_GetThisThreadState.invokeExact()).address() != 0;
        } catch (Throwable e) {
            throw PyErrors.unchecked(e);
        }
    }

    /** Whether the current thread holds the GIL now (a critical downcall: no transition, a few ns). */
    public static boolean isHeld() {
        try {
            return (int) CApi.PyGILState_Check.invokeExact() == 1;
        } catch (Throwable e) {
            throw PyErrors.unchecked(e);
        }
    }
}
