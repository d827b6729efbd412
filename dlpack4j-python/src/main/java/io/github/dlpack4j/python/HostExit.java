package io.github.dlpack4j.python;

import io.github.dlpack4j.Dlpack;

/**
 * When Python hosts the JVM ({@link Python#attach()}, e.g. under JPype), Python outlives it: the
 * host destroys the JVM (at exit, or earlier with {@code jpype.shutdownJVM()}), then Python frees
 * what is left, and anything of dlpack4j's that Python frees then would call into a JVM that is gone
 * (the process aborts in {@code UpcallLinker}). So, before the JVM goes, {@link #detach} hands
 * everything over for good: every live export's deleter becomes NULL (consumers skip a NULL
 * deleter), and so does that of every later export; {@code dlpack4j.Tensor} objects and Java
 * functions, live and later, get a reference that is never dropped. What they hold is leaked to
 * the process's end.
 *
 * <p>Under JPype, {@link #register} adds a JPype shutdown hook: JPype runs its hooks on every
 * shutdown path (its {@code atexit} handler and an explicit {@code shutdownJVM()}), on their own
 * threads, while it has released the GIL, before it destroys the JVM. Other hosts get a Python
 * {@code atexit} handler, which is right for a host that finalizes Python before it destroys the
 * JVM.
 *
 * <p>One thing is out of reach: a capsule from {@code __dlpack__} that Python code still holds when
 * the JVM goes keeps its destructor, an upcall. Capsules cannot be found again reliably (jax, for
 * one, clears a consumed capsule's destructor, so it never reports being freed), and a capsule
 * still held then is rare: consume or drop capsules first, or set JPype's
 * {@code jpype.config.destroy_jvm = False}.
 */
final class HostExit {
    private HostExit() {}

    /** Arranges {@link #detach} before the host destroys the JVM; needs the GIL. */
    static void register(Python py) {
        if (registerWithJpype()) {
            return;
        }
        PyObject handler = py.function(args -> {
            detach();
            return null;
        });
        try (PyObject atexit = py.importModule("atexit"); PyObject r = atexit.callMethod("register", handler)) {
            // atexit keeps the handler; detach() keeps it from ever being freed
        } finally {
            handler.close();
        }
    }

    /** {@code org.jpype.JPypeContext.getInstance().addShutdownHook(thread)}, if JPype hosts this JVM. */
    private static boolean registerWithJpype() {
        try {
            Class<?> context = Class.forName("org.jpype.JPypeContext", true, ClassLoader.getSystemClassLoader());
            Object instance = context.getMethod("getInstance").invoke(null);
            if (instance == null) {
                return false;
            }
            Thread hook = Thread.ofPlatform().name("dlpack4j-host-exit").unstarted(() -> Gil.with(HostExit::detach));
            context.getMethod("addShutdownHook", Thread.class).invoke(instance, hook);
            return true;
        } catch (ReflectiveOperationException | LinkageError | RuntimeException notJpype) {
            return false;
        }
    }

    /**
     * Makes sure no Python object, capsule deleter or consumer calls into Java any more; holds the
     * GIL. Each step runs even if another failed.
     */
    static String detach() {
        Python.markHostExit();
        StringBuilder done = new StringBuilder();
        step(done, "exports", Dlpack::abandonLiveExports);
        step(done, "tensors", JavaTensorType::keepAllAlive);
        step(done, "functions", JavaFunctions::keepAllAlive);
        return done.toString();
    }

    private static void step(StringBuilder done, String what, java.util.function.IntSupplier step) {
        try {
            done.append(step.getAsInt()).append(' ').append(what).append("; ");
        } catch (RuntimeException | Error e) {
            done.append(what).append(" failed: ").append(e).append("; ");
        }
    }
}
