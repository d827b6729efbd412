package io.github.dlpack4j.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * The exit of a JVM that embeds Python ({@link Python#start()}), made safe from a GIL that a Java
 * thread holds or waits for then: a daemon thread inside {@link Python#withGil} or calling Python,
 * a {@code System.exit} called inside a scope.
 *
 * <p>Why it matters: the JVM stops its threads where they are once the shutdown hooks are done (a
 * thread in native code, waiting for the GIL say, stops as it returns to Java), and then calls the C
 * library's {@code exit}, which runs the native exit handlers of every library in the process.
 * torch's static destructors drop Python references and take the GIL for it
 * ({@code pybind11::gil_scoped_acquire}); a GIL held by a stopped thread never comes back (the
 * interpreter is never finalized), so the process waited for ever.
 *
 * <p>What is done: the shutdown hook ({@link #checkGilAtExit}) raises a flag, then waits, with a
 * bound, until no Java thread waits for the GIL or holds it through dlpack4j ({@link Gil#entered()}).
 * If one still does, the process is ended by {@code _exit} with the JVM's own exit status, right
 * after the JVM's exit work and before any native exit handler could wait for the GIL
 * ({@link #endBeforeNativeExitHandlers}), and a line on stderr names the threads. A thread that
 * begins to take the GIL after the flag was raised ({@link #checkEntry}) arranges the same end, since
 * it may be stopped holding the GIL too; the exit is then silent.
 */
final class EmbeddedExit {
    /** How long the shutdown hook waits for the GIL to be free: Python code gives it up within 5 ms when asked. */
    private static final long GIL_WAIT_NANOS = 500_000_000L;
    /** Raised by the shutdown hook: a Java thread that takes the GIL from now on does so during the exit. */
    private static volatile boolean exiting;
    private static final AtomicBoolean ENDING_EARLY = new AtomicBoolean();

    private EmbeddedExit() {}

    /**
     * Called by the JVM's shutdown hook (after {@link Python#isShuttingDown()} became true): makes the
     * process end before a native exit handler waits for a GIL that a stopped Java thread holds.
     */
    static void checkGilAtExit() {
        exiting = true;
        long deadline = System.nanoTime() + GIL_WAIT_NANOS;
        while (Gil.entered() != 0) {
            if (System.nanoTime() - deadline >= 0) {
                System.err.println("dlpack4j: the JVM exits while " + holders() + " the GIL; the process ends "
                        + "without the native exit handlers (torch's would wait for the GIL for ever). End GIL "
                        + "scopes (Python.withGil) and Python calls before the JVM exits.");
                endBeforeNativeExitHandlers();
                return;
            }
            LockSupport.parkNanos(1_000_000L);
        }
    }

    /** Called by a Java thread about to take the GIL, counted in already ({@link Gil#entered()}). */
    static void checkEntry() {
        if (exiting) {
            endBeforeNativeExitHandlers();
        }
    }

    /** The threads whose stacks show a GIL scope (or a Python call), as words for the message. */
    private static String holders() {
        List<String> inScope = new ArrayList<>();
        List<String> calling = new ArrayList<>();
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            Thread t = e.getKey();
            if (t == Thread.currentThread()) {
                continue;
            }
            boolean scope = false;
            boolean call = false;
            for (StackTraceElement f : e.getValue()) {
                if (f.getClassName().equals(Gil.class.getName())) {
                    scope |= f.getMethodName().equals("scope");
                    call = true;
                }
            }
            if (scope) {
                inScope.add('"' + t.getName() + '"');
            } else if (call) {
                calling.add('"' + t.getName() + '"');
            }
        }
        if (!inScope.isEmpty()) {
            return "thread " + String.join(", ", inScope) + " (inside Python.withGil) holds";
        }
        if (!calling.isEmpty()) {
            return "thread " + String.join(", ", calling) + " (calling Python) waits for or holds";
        }
        return "a thread waits for or holds";
    }

    /**
     * Registers {@code _exit} as the C library's last-registered exit handler, so that it runs
     * first: {@code exit(status)} then ends the process at once with that same status, after the
     * JVM's own exit work (done before the JVM calls {@code exit}) and before the exit handlers that
     * libraries registered when they were loaded. C streams are flushed first, as {@code exit} would.
     * Once per process; glibc only ({@code on_exit}, {@code fcloseall}); elsewhere nothing changes.
     */
    private static void endBeforeNativeExitHandlers() {
        if (!ENDING_EARLY.compareAndSet(false, true)) {
            return;
        }
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        var onExit = libc.find("on_exit");
        var exit = libc.find("_exit");
        var flushAll = libc.find("fcloseall");
        if (onExit.isEmpty() || exit.isEmpty() || flushAll.isEmpty()) {
            return;
        }
        try {
            // on_exit calls its handler as handler(status, arg): _exit(int) takes the status from the
            // first argument register and ignores the second, and fcloseall() ignores both. Sound on
            // the C calling conventions of Linux (x86-64, AArch64): arguments in registers, cleaned up
            // by the caller. Handlers run last-registered first: the flush, then _exit.
            MethodHandle register = linker.downcallHandle(onExit.get(), FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            if ((int) register.invokeExact(exit.get(), MemorySegment.NULL) == 0) {
                // glibc's fcloseall is _IO_cleanup, the flush of C streams that exit does after its handlers.
                int ignored = (int) register.invokeExact(flushAll.get(), MemorySegment.NULL);
            }
        } catch (Throwable t) {
            System.err.println("dlpack4j: could not arrange the process's end past a held GIL: " + t);
        }
    }
}
