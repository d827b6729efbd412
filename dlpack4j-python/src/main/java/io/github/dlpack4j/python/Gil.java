package io.github.dlpack4j.python;

/**
 * The GIL, taken for the duration of one public call.
 *
 * <p>Each OS thread keeps one CPython thread state for its whole life: the first time a thread
 * calls in, it takes {@code PyGILState_Ensure} twice and releases only once, so the state's
 * counter never returns to zero and CPython never destroys it. Later calls pay only for taking and
 * releasing the GIL (about 57 ns a pair here, against 370 ns when a thread state is made and torn
 * down on every call, which has also crashed other embedders). Calls nest: a thread that holds the
 * GIL (inside an upcall from Python) takes it again for free.
 *
 * <p>Virtual threads are refused: one may move to another OS thread while it holds the GIL, which
 * would leave CPython's thread state on the wrong thread.
 */
final class Gil {
    private static final ThreadLocal<boolean[]> HAS_STATE = ThreadLocal.withInitial(() -> new boolean[1]);

    private Gil() {}

    /** Takes the GIL; pass the result to {@link #release}. */
    static int acquire() {
        Thread t = Thread.currentThread();
        if (t.isVirtual()) {
            throw new IllegalStateException("Python cannot be called from a virtual thread (it may change OS threads "
                    + "while holding the GIL); call it from a platform thread, e.g. an Executors.newFixedThreadPool");
        }
        int state;
        try {
            state = (int) CApi.PyGILState_Ensure.invokeExact();
            boolean[] has = HAS_STATE.get();
            if (!has[0]) {
                has[0] = true;
                int pin = (int) CApi.PyGILState_Ensure.invokeExact(); // never released: the state stays
            }
        } catch (Throwable e) {
            throw Py.unchecked(e);
        }
        return state;
    }

    /** Releases what {@link #acquire} took. */
    static void release(int state) {
        try {
            CApi.PyGILState_Release.invokeExact(state);
        } catch (Throwable e) {
            throw Py.unchecked(e);
        }
    }

    /** Marks the current thread as already owning a permanent thread state (the one that initialised Python). */
    static void adoptCurrentThread() {
        HAS_STATE.get()[0] = true;
    }
}
