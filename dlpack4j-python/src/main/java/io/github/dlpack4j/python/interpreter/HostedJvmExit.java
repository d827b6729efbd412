package io.github.dlpack4j.python.interpreter;

import io.github.dlpack4j.internal.Trampoline;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntSupplier;

/**
 * When Python hosts the JVM ({@link Interpreter#attach()}, e.g. under JPype), Python outlives it: the
 * host destroys the JVM (at exit, or earlier with {@code jpype.shutdownJVM()}), then Python frees
 * what is left, and anything of dlpack4j's that Python frees then would call into a JVM that is gone
 * (the process aborts in {@code UpcallLinker}). So, before the JVM goes, {@link #detach} hands
 * everything over for good: every function that dlpack4j handed to C is a {@link Trampoline}, and
 * all of them are turned off, so that a call, whenever it comes, returns at once without the JVM
 * (the deleter that every export carries, whatever pointer a consumer kept; the destructor of a
 * capsule still held; the methods and slots of {@code dlpack4j.Tensor}; Java functions).
 * {@code dlpack4j.Tensor} objects and Java functions, live and later, also get a reference that is
 * never dropped, and where there are no trampolines (on other platforms than Linux x86-64) the
 * deleter of every live and later export becomes NULL instead, which consumers that read it when
 * they delete skip. What they hold is leaked to the process's end.
 *
 * <p>This package knows only its own part of that ({@link JavaFunctions}); what else must be let
 * go of (the DLPack exports and the {@code dlpack4j.Tensor} objects) is registered by its owners
 * with {@link #onDetach}, before the host can exit.
 *
 * <p>Under JPype, {@link #register} adds a JPype shutdown hook: JPype runs its hooks on every
 * shutdown path (its {@code atexit} handler and an explicit {@code shutdownJVM()}), on their own
 * threads, while it has released the GIL, before it destroys the JVM. Other hosts get a Python
 * {@code atexit} handler, which is right for a host that finalizes Python before it destroys the
 * JVM.
 *
 * <p>Without trampolines, two things are out of reach: a consumer that calls the deleter without
 * checking it for NULL (jaxlib checks it only when it imports) and a capsule from
 * {@code __dlpack__} that Python code still holds when the JVM goes, whose destructor is an upcall.
 * Neither can be found again (jax, for one, clears a consumed capsule's destructor, so it never
 * reports being freed): there, drop such arrays and capsules first, or set JPype's
 * {@code jpype.config.destroy_jvm = False}.
 */
public final class HostedJvmExit {
    /** One thing to let go of: its name in {@link #detach()}'s account, and the step, which returns how many. */
    private record Step(String what, IntSupplier step) {}

    private static final List<Step> STEPS = new CopyOnWriteArrayList<>();

    private HostedJvmExit() {}

    /**
     * Adds a step to {@link #detach()}, run with the GIL held before this package's own (the Java
     * functions), in the order added; each runs even if another failed. A step must hand over for
     * good whatever of its owner would call into Java later, and return how many it handed over.
     *
     * @param what what the step lets go of, for the account ("exports", say)
     * @param step the step
     */
    public static void onDetach(String what, IntSupplier step) {
        STEPS.add(new Step(what, step));
    }

    /** Arranges {@link #detach} before the host destroys the JVM; needs the GIL. */
    static void register() {
        if (registerWithJpype()) {
            return;
        }
        MemorySegment handler = JavaFunctions.create(args -> {
            detach();
            return null;
        });
        MemorySegment atexit = Names.importModule("atexit");
        try {
            MemorySegment register = Names.getAttr(atexit, "register");
            MemorySegment callArgs = Convert.tuple(new MemorySegment[] {handler});
            try {
                // atexit keeps the handler; detach() keeps it from ever being freed
                Refs.decRef(PyErrors.check((MemorySegment) CApi.PyObject_CallObject.invokeExact(register, callArgs)));
            } finally {
                Refs.decRef(callArgs);
                Refs.decRef(register);
            }
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        } finally {
            Refs.decRef(atexit);
            Refs.decRef(handler);
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
            Thread hook = Thread.ofPlatform().name("dlpack4j-host-exit").unstarted(() -> Gil.with(HostedJvmExit::detach));
            context.getMethod("addShutdownHook", Thread.class).invoke(instance, hook);
            return true;
        } catch (ReflectiveOperationException | LinkageError | RuntimeException notJpype) {
            return false;
        }
    }

    /**
     * Makes sure no Python object, capsule deleter or consumer calls into Java any more; holds the
     * GIL. Each step runs even if another failed; the trampolines go off last, once nothing else
     * needs to call Java.
     *
     * @return what was handed over, e.g. {@code "2 exports; 1 tensors; 0 functions; 14 trampolines; "}
     */
    public static String detach() {
        Shutdown.markHostExit();
        StringBuilder done = new StringBuilder();
        for (Step s : STEPS) {
            step(done, s.what(), s.step());
        }
        step(done, "functions", JavaFunctions::keepAllAlive);
        step(done, "trampolines", Trampoline::disarmAll);
        return done.toString();
    }

    private static void step(StringBuilder done, String what, IntSupplier step) {
        try {
            done.append(step.getAsInt()).append(' ').append(what).append("; ");
        } catch (RuntimeException | Error e) {
            done.append(what).append(" failed: ").append(e).append("; ");
        }
    }
}
