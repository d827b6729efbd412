package io.github.dlpack4j.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The exit of a JVM that embeds Python ({@link Python#start()}), made safe from a GIL that a Java
 * thread still holds then: a daemon thread inside {@link Python#withGil}, a {@code System.exit}
 * called inside a scope, a thread stopped between taking and giving back the GIL.
 *
 * <p>Why it matters: the JVM stops its threads where they are once the shutdown hooks are done,
 * and then calls the C library's {@code exit}, which runs the native exit handlers of every
 * library in the process. torch's static destructors drop Python references and take the GIL for
 * it ({@code pybind11::gil_scoped_acquire}); a GIL held by a stopped thread never comes back, so the
 * process waited for ever. The interpreter is never finalized, so nothing else ever gives it back.
 *
 * <p>What is done: the shutdown hook ({@link #checkGilAtExit}) has a fresh thread take the GIL, with
 * a bound. If it cannot, a Java thread holds it and will be stopped holding it: the process is then
 * ended by {@code _exit} with the JVM's own exit status, right after the JVM's exit work and before
 * any native exit handler could wait for the GIL (see {@link #endBeforeNativeExitHandlers}), and a
 * line on stderr names the threads that held it. If it can, it marks the GIL checked while holding
 * it, so that every later GIL acquisition by a Java thread sees the mark ({@link #afterAcquire})
 * and ends the process the same way, since that thread, too, may be stopped holding the GIL.
 */
final class EmbeddedExit {
    /** How long the shutdown hook waits for the GIL: Python code gives it up within 5 ms when asked. */
    private static final long GIL_WAIT_MILLIS = 500;
    /** Set, holding the GIL, by the shutdown hook's probe: a later acquisition happens during the exit. */
    private static volatile boolean gilChecked;
    private static final AtomicBoolean ENDING_EARLY = new AtomicBoolean();

    private EmbeddedExit() {}

    /**
     * Called by the JVM's shutdown hook (after {@link Python#isShuttingDown()} became true): makes the
     * process end before a native exit handler waits for a GIL that a stopped Java thread holds.
     */
    static void checkGilAtExit() {
        CountDownLatch taken = new CountDownLatch(1);
        Thread probe = Thread.ofPlatform().daemon().name("dlpack4j-python-exit-probe").start(() -> {
            int g = Gil.acquire();
            try {
                gilChecked = true;
            } finally {
                Gil.release(g);
            }
            taken.countDown();
        });
        boolean free;
        try {
            free = taken.await(GIL_WAIT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            free = false;
        }
        if (!free) {
            System.err.println("dlpack4j: the JVM exits while " + holders(probe) + " the GIL; the process ends "
                    + "without the native exit handlers (torch's would wait for the GIL for ever). End GIL "
                    + "scopes (Python.withGil) before the JVM exits.");
            endBeforeNativeExitHandlers();
        }
    }

    /** Called by a Java thread that just took the GIL: during the exit, that thread may be stopped holding it. */
    static void afterAcquire() {
        if (gilChecked) {
            endBeforeNativeExitHandlers();
        }
    }

    /** The threads whose stacks show a GIL scope (or a Python call), as words for the message. */
    private static String holders(Thread probe) {
        List<String> inScope = new ArrayList<>();
        List<String> calling = new ArrayList<>();
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            Thread t = e.getKey();
            if (t == probe || t == Thread.currentThread()) {
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
            return "thread " + String.join(", ", calling) + " (calling Python) holds";
        }
        return "a thread holds";
    }

    /**
     * Registers {@code _exit} as the C library's last-registered exit handler, so that it runs
     * first: {@code exit(status)} then ends the process at once with that same status, after the
     * JVM's own exit work (done before the JVM calls {@code exit}) and before the exit handlers that
     * libraries registered when they were loaded. C streams are flushed first, as {@code exit} would.
     * Once per process; glibc only ({@code on_exit}); elsewhere nothing changes.
     */
    private static void endBeforeNativeExitHandlers() {
        if (!ENDING_EARLY.compareAndSet(false, true)) {
            return;
        }
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        var onExit = libc.find("on_exit");
        var exit = libc.find("_exit");
        var atexit = libc.find("atexit");
        var flushAll = libc.find("fcloseall");
        if (onExit.isEmpty() || exit.isEmpty()) {
            return;
        }
        try {
            // on_exit calls its handler as handler(status, arg). _exit(int) takes the status from the
            // first argument register and ignores the second: sound on the C calling conventions of
            // Linux (x86-64, AArch64), where the caller passes arguments in registers and cleans up.
            int r = (int) linker.downcallHandle(onExit.get(), FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS))
                    .invokeExact(exit.get(), MemorySegment.NULL);
            if (r == 0 && atexit.isPresent() && flushAll.isPresent()) {
                // Registered after, so run before _exit: glibc's fcloseall is the stdio flush that exit does last.
                int ignored = (int) linker.downcallHandle(atexit.get(), FunctionDescriptor.of(JAVA_INT, ADDRESS))
                        .invokeExact(flushAll.get());
            }
        } catch (Throwable t) {
            System.err.println("dlpack4j: could not arrange the process's end past a held GIL: " + t);
        }
    }
}
