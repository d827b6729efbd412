package io.github.dlpack4j.python.interpreter;

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
 * The exit of a JVM that embeds Python ({@link io.github.dlpack4j.python.Python#start()}), made safe from a GIL that a thread
 * holds or waits for then: a daemon thread inside {@link io.github.dlpack4j.python.Python#withGil} or calling Python, a
 * {@code System.exit} called inside a scope, a thread that Python started (a
 * {@code threading.Thread}) and that calls Java functions ({@link io.github.dlpack4j.python.Python#function}).
 *
 * <p>Why it matters: the JVM stops its threads where they are once the shutdown hooks are done (a
 * thread in native code, waiting for the GIL say, stops as it returns to Java), and then calls the C
 * library's {@code exit}, which runs the native exit handlers of every library in the process.
 * torch's static destructors drop Python references and take the GIL for it
 * ({@code pybind11::gil_scoped_acquire}); a GIL held by a stopped thread never comes back (the
 * interpreter is never finalized), so the process waited for ever. A thread that Python started is
 * attached to the JVM, as a daemon, by its first call of a Java function, until it ends: it neither
 * holds the exit back nor escapes being stopped. Inside a Java function it holds the GIL that Python
 * took for the call; back in Python, it is stopped holding the GIL as soon as it calls one again,
 * however late: a count of such calls, raised as they begin, misses every call that begins after
 * the JVM stopped its threads (an exit hung so in 6 of 10 runs with a thread alternating Python
 * work and calls).
 *
 * <p>What is done: {@link Gil} counts the Java threads that wait for the GIL or hold it through
 * dlpack4j ({@link Gil#entered()}). The shutdown hook ({@link #checkGilAtExit}) raises a flag, then
 * waits, with a bound, until the count is zero and no thread that native code started is attached
 * to the JVM ({@link #startedOutsideJava}): both need no work on any call. If either is left, the
 * process is ended by {@code _exit} with the JVM's own exit status, right after the JVM's exit work
 * and before any native exit handler could wait for the GIL ({@link #endBeforeNativeExitHandlers}),
 * and a line on stderr names the threads (a thread that Python started has only a name that the JVM
 * made up: the message adds the frame of the Java function it is in). A Java thread that begins to
 * take the GIL after the flag was raised ({@link #checkEntry}) arranges the same end, since it may be
 * stopped holding the GIL too; the exit is then silent. A thread that Python started and that calls
 * Java for the first time after the hook ran is not seen.
 */
final class EmbeddedPythonExit {
    /** How long the shutdown hook waits for the GIL to be free: Python code gives it up within 5 ms when asked. */
    private static final long GIL_WAIT_NANOS = 500_000_000L;
    /** Raised by the shutdown hook: a Java thread that takes the GIL from now on does so during the exit. */
    private static volatile boolean exiting;
    private static final AtomicBoolean ENDING_EARLY = new AtomicBoolean();

    private EmbeddedPythonExit() {}

    /**
     * Called by the JVM's shutdown hook (after {@link Shutdown#isShuttingDown()} became true): makes the
     * process end before a native exit handler waits for a GIL that a stopped Java thread holds.
     */
    static void checkGilAtExit() {
        exiting = true;
        long deadline = System.nanoTime() + GIL_WAIT_NANOS;
        while (Gil.entered() != 0 || anyStartedOutsideJava()) {
            if (System.nanoTime() - deadline >= 0) {
                System.err.println("dlpack4j: the JVM exits while " + holders() + "; the process ends "
                        + "without the native exit handlers (torch's would wait for the GIL for ever). End GIL "
                        + "scopes (Python.withGil) and Python calls, and end the threads that Python started and "
                        + "that call Java, before the JVM exits.");
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

    /**
     * Whether a thread that native code started (one that Python started, say) is attached to the
     * JVM now: it called Java (a Java function, a deleter) and has not ended.
     */
    private static boolean anyStartedOutsideJava() {
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            if (startedOutsideJava(e.getKey(), e.getValue())) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether {@code t} was started by native code and attached to the JVM by a call into Java (as a
     * daemon, in the main thread group): outside Java it shows no frame, inside its outermost frame is
     * the method called from native code, where a thread started by Java begins with {@code run}.
     * The JVM's own such threads (signal dispatcher, attach listener) are in the root thread group.
     */
    private static boolean startedOutsideJava(Thread t, StackTraceElement[] frames) {
        ThreadGroup g = t.getThreadGroup();
        return t != Thread.currentThread() && t.isDaemon() && g != null && g.getParent() != null
                && (frames.length == 0 || !frames[frames.length - 1].getMethodName().equals("run"));
    }

    /**
     * The threads whose stacks show a GIL scope, a Java function that Python called, or a Python
     * call, and the threads that native code started, as words for the message: each is named by
     * what it is in innermost.
     */
    private static String holders() {
        List<String> inScope = new ArrayList<>();
        List<String> inFunction = new ArrayList<>();
        List<String> calling = new ArrayList<>();
        List<String> outside = new ArrayList<>();
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            Thread t = e.getKey();
            if (t == Thread.currentThread()) {
                continue;
            }
            String name = '"' + t.getName() + '"';
            StackTraceElement[] frames = e.getValue();
            boolean call = false;
            boolean named = false;
            for (int i = 0; i < frames.length && !named; i++) { // innermost first
                StackTraceElement f = frames[i];
                if (f.getClassName().equals(Gil.class.getName())) {
                    if (f.getMethodName().equals("scope")) {
                        inScope.add(name);
                        named = true;
                    }
                    call = true;
                } else if (f.getClassName().equals(JavaFunctions.class.getName()) && f.getMethodName().equals("invoke")) {
                    inFunction.add(name + " (in a Java function that Python called" + function(frames, i) + ")");
                    named = true;
                }
            }
            if (named) {
                continue;
            }
            if (call) {
                calling.add(name);
            } else if (startedOutsideJava(t, frames)) {
                outside.add(name);
            }
        }
        List<String> parts = new ArrayList<>();
        if (!inScope.isEmpty()) {
            parts.add("thread " + String.join(", ", inScope) + " (inside Python.withGil) holds the GIL");
        }
        if (!inFunction.isEmpty()) {
            parts.add("thread " + String.join(", ", inFunction) + " holds the GIL");
        }
        if (!calling.isEmpty()) {
            parts.add("thread " + String.join(", ", calling) + " (calling Python) waits for or holds the GIL");
        }
        if (!outside.isEmpty()) {
            parts.add("thread " + String.join(", ", outside) + " (started outside Java, by Python say, and "
                    + "attached to the JVM since it called Java) may hold the GIL");
        }
        return parts.isEmpty() ? "a thread waits for or holds the GIL" : String.join(" and ", parts);
    }

    /**
     * {@code ", at Class.method(File.java:line)"}: the function's own frame, the first above the
     * upcall ({@code frames[upcall]}) with a source line (a lambda's proxy has none), without the
     * class loader's name; empty if there is none.
     */
    private static String function(StackTraceElement[] frames, int upcall) {
        for (int i = upcall - 1; i >= 0; i--) {
            StackTraceElement f = frames[i];
            if (f.getLineNumber() >= 0 && f.getFileName() != null) {
                return ", at " + f.getClassName() + "." + f.getMethodName() + "(" + f.getFileName() + ":"
                        + f.getLineNumber() + ")";
            }
        }
        return "";
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
