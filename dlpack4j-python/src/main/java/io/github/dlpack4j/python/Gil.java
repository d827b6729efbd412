package io.github.dlpack4j.python;

/**
 * The GIL, taken for the duration of one public call.
 *
 * <p>Each OS thread keeps one CPython thread state for its whole life: the first time a thread
 * calls in, it takes {@code PyGILState_Ensure} twice and releases only once, so the state's counter
 * never returns to zero and CPython never destroys it. Later calls pay only for taking and giving
 * back the GIL (about 65 ns a pair here), against several times that when a thread state is made
 * and torn down on every call, which has also crashed other embedders. {@code PyGILState_Ensure}
 * nests: a thread that holds the GIL already (Java code called from Python, a deleter that Python
 * runs) takes it again for free, even when native code in between released it.
 *
 * <p>Virtual threads are refused: one may move to another OS thread while it holds the GIL, which
 * would leave CPython's thread state on the wrong thread.
 */
final class Gil {
    private static final ThreadLocal<boolean[]> HAS_STATE = ThreadLocal.withInitial(() -> new boolean[1]);

    private Gil() {}

    /** Takes the GIL; pass the result to {@link #release}. */
    static int acquire() {
        boolean[] has = HAS_STATE.get();
        try {
            if (!has[0] && Thread.currentThread().isVirtual()) {
                throw new IllegalStateException("Python cannot be called from a virtual thread (it may change OS "
                        + "threads while holding the GIL); call it from a platform thread, e.g. a fixed thread pool");
            }
            // The first Ensure takes the GIL (release gives it back); the pin, taken second, only
            // raises the thread state's counter and is never released, so the state stays.
            int state = (int) CApi.PyGILState_Ensure.invokeExact();
            if (!has[0]) {
                int pin = (int) CApi.PyGILState_Ensure.invokeExact();
                has[0] = true;
            }
            PendingDecrefs.drain();
            return state;
        } catch (Throwable e) {
            throw Py.unchecked(e);
        }
    }

    /** Releases what {@link #acquire} took. */
    static void release(int state) {
        try {
            CApi.PyGILState_Release.invokeExact(state);
        } catch (Throwable e) {
            throw Py.unchecked(e);
        }
    }

    /** A body run with the GIL held; may call the C API and throw what its downcalls declare. */
    @FunctionalInterface
    interface Body<T> {
        T run() throws Throwable;
    }

    /**
     * Runs {@code body} holding the GIL, and rethrows what it throws unchecked. For calls off the hot
     * path: the hot ones ({@link PyObject#call}, {@link PyObject#invoke}) spell the same out, so
     * that their downcalls are compiled inline.
     */
    static <T> T with(Body<T> body) {
        int g = acquire();
        try {
            return body.run();
        } catch (Throwable t) {
            throw Py.unchecked(t);
        } finally {
            release(g);
        }
    }

    /** Whether the current thread holds the GIL. */
    static boolean isHeld() {
        try {
            return (int) CApi.PyGILState_Check.invokeExact() == 1;
        } catch (Throwable e) {
            throw Py.unchecked(e);
        }
    }
}
