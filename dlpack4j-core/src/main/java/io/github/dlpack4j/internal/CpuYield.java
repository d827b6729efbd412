package io.github.dlpack4j.internal;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;

/**
 * The pause of a thread that spins while it waits for another thread: it offers its CPU to any
 * thread waiting to run there ({@code sched_yield}), and returns at once when none does. Not API:
 * for dlpack4j's own modules.
 *
 * <p>Why not {@link Thread#onSpinWait()} alone: a wake-up may put the thread it wakes on the waker's
 * CPU while another CPU idles (seen on a two-vCPU VM, probably because spinning threads make the
 * cores look busy, so the kernel does not look for an idle one). Two threads that hand work to each
 * other then share one CPU, and a side that only spins keeps the other from running until its time
 * slice ends. A side that yields lets the other run at once. {@link Thread#yield()} does this on a
 * platform thread only; on a virtual thread it yields to the other virtual threads, not the
 * carrier's CPU, so this calls the C library.
 */
public final class CpuYield {
    /** {@code int sched_yield(void)}; null where the C library has none (the pause only spins then). */
    private static final MethodHandle SCHED_YIELD = schedYield();

    private CpuYield() {}

    private static MethodHandle schedYield() {
        try {
            Linker linker = Linker.nativeLinker();
            return linker.defaultLookup().find("sched_yield")
                    .map(f -> linker.downcallHandle(f, FunctionDescriptor.of(JAVA_INT)))
                    .orElse(null);
        } catch (RuntimeException | LinkageError e) { // a platform without it, or native access refused
            return null;
        }
    }

    /** {@return whether a pause yields the CPU ({@code sched_yield} found), rather than only spinning} */
    static boolean yieldsTheCpu() {
        return SCHED_YIELD != null;
    }

    /**
     * Offers this thread's CPU to another thread ready to run on it. On a virtual thread it is its
     * carrier's CPU: the call is a system call that does not block, made mounted.
     */
    public static void pause() {
        if (SCHED_YIELD == null) {
            Thread.onSpinWait();
            return;
        }
        try {
            int ignored = (int) SCHED_YIELD.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("sched_yield failed", t);
        }
    }
}
