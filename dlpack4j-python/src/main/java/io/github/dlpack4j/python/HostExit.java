package io.github.dlpack4j.python;

import io.github.dlpack4j.Dlpack;

/**
 * When Python hosts the JVM ({@link Python#attach()}, e.g. under JPype), Python outlives it: at exit
 * the host destroys the JVM first, then Python frees what is left, and anything of dlpack4j's that
 * Python frees then would call into a JVM that is gone (the process aborts in
 * {@code UpcallLinker}). So {@link #register} adds a Python {@code atexit} handler, which runs
 * before JPype's own (handlers run last-registered first), and hands everything over for good:
 * every live export's deleter becomes NULL (consumers skip a NULL deleter), and
 * {@code dlpack4j.Tensor} objects and Java functions get a reference that is never dropped. What
 * they hold is leaked to the process's end, which comes next anyway.
 *
 * <p>One thing is out of reach: a capsule from {@code __dlpack__} that Python code still holds at
 * exit keeps its destructor, an upcall. Capsules cannot be found again reliably (jax, for one,
 * clears a consumed capsule's destructor, so it never reports being freed), and a capsule still
 * held at exit is rare: consume or drop capsules before the program ends, or set JPype's
 * {@code jpype.config.destroy_jvm = False}.
 */
final class HostExit {
    private HostExit() {}

    /** Registers the handler; needs the GIL. */
    static void register(Python py) {
        PyObject handler = py.function(args -> {
            detach();
            return null;
        });
        try (PyObject atexit = py.importModule("atexit"); PyObject r = atexit.callMethod("register", handler)) {
            // the handler stays referenced by atexit, and is itself kept alive by detach()
        } finally {
            handler.close();
        }
    }

    /** Makes sure no Python object, capsule or consumer calls into Java any more; holds the GIL. */
    static String detach() {
        Python.markHostExit();
        int exports = Dlpack.abandonLiveExports();
        int instances = JavaTensorType.keepAllAlive();
        int functions = JavaFunctions.keepAllAlive();
        return exports + " exports, " + instances + " tensors, " + functions + " functions";
    }
}
