package io.github.dlpack4j.python.interpreter;

import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The platform threads that run Python work for virtual threads. A virtual thread may move to
 * another OS thread at any moment, so it can neither hold the GIL nor keep a CPython thread state
 * (which belongs to one OS thread): each dlpack4j call it makes, or its whole
 * {@link io.github.dlpack4j.python.Python#withGil} body, is handed to one of a small pool of
 * platform threads, each with its own thread state (made on its first call and kept, as on any
 * platform thread), and the virtual thread parks until the work is done, without pinning its
 * carrier: the hand-over happens in Java code, before any native frame is on its stack. What the
 * work returns or throws comes back as it is, the same object a direct call would give. Platform
 * threads never come here: they call Python directly, as before.
 *
 * <p>The pool has {@link #size()} threads: the system property {@value #SIZE_PROPERTY}, else the
 * number of processors, between 2 and 8. The GIL lets one of them run Python at a time; more
 * threads help when calls spend time without the GIL (numpy, torch and I/O release it) or when
 * {@code withGil} bodies block. Work waits for a free thread in arrival order. As with the GIL
 * itself, a body that waits for another virtual thread's call while every pool thread is busy
 * deadlocks; make the pool larger than the number of bodies that can wait at once.
 */
public final class PythonThreads {
    /** The system property that sets the pool's size. */
    public static final String SIZE_PROPERTY = "dlpack4j.python.threads";
    /**
     * How often an idle pool thread looks for work before it parks, and a waiting virtual thread for
     * its result (each a few microseconds): a short call then costs no wake-up of a parked thread
     * (each about 5 µs here, twice per hop), while a long one costs that much spinning only.
     */
    private static final int SPINS = 200;

    private static final LinkedTransferQueue<Hop<?>> QUEUE = new LinkedTransferQueue<>();
    private static final AtomicInteger STARTED = new AtomicInteger();
    /** The pool's size once read (0 before). */
    private static volatile int size;

    private PythonThreads() {}

    /** One piece of work handed over, and what it gave. */
    private static final class Hop<T> {
        final Gil.Body<T> body;
        final Thread waiter;
        T result;
        Throwable failure;
        volatile boolean done;

        Hop(Gil.Body<T> body, Thread waiter) {
            this.body = body;
            this.waiter = waiter;
        }
    }

    /**
     * {@return the number of platform threads that run Python work for virtual threads}
     *
     * @throws IllegalArgumentException if {@value #SIZE_PROPERTY} is not a count from 1 to 1024
     */
    public static int size() {
        int n = size;
        if (n == 0) {
            size = n = readSize();
        }
        return n;
    }

    private static int readSize() {
        String p = System.getProperty(SIZE_PROPERTY);
        if (p != null && !p.isBlank()) {
            try {
                int n = Integer.parseInt(p.strip());
                if (n >= 1 && n <= 1024) {
                    return n;
                }
            } catch (NumberFormatException ignored) {
                // fall through to the message
            }
            throw new IllegalArgumentException(SIZE_PROPERTY + "=" + p + ": expected a thread count from 1 to 1024");
        }
        return Math.clamp(Runtime.getRuntime().availableProcessors(), 2, 8);
    }

    /**
     * Runs {@code body} on one of the pool's platform threads and returns what it returned, or
     * throws what it threw; the calling (virtual) thread parks meanwhile. An interrupt does not
     * stop the work (a direct call is not interruptible either): the thread waits for it, and its
     * interrupt status is set again after.
     *
     * @param <T>  what {@code body} computes
     * @param body the work, run on a platform thread
     * @return what {@code body} returned
     * @throws Throwable what {@code body} threw, unchanged
     */
    public static <T> T call(Gil.Body<T> body) throws Throwable {
        startPool();
        Hop<T> hop = new Hop<>(body, Thread.currentThread());
        QUEUE.put(hop);
        for (int i = 0; i < SPINS && !hop.done; i++) {
            Thread.onSpinWait();
        }
        boolean interrupted = false;
        while (!hop.done) {
            LockSupport.park(hop);
            interrupted |= Thread.interrupted();
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        if (hop.failure != null) {
            throw hop.failure;
        }
        return hop.result;
    }

    /** {@link #call} for code that declares no checked exception: what it throws comes back unchecked. */
    public static <T> T callUnchecked(Gil.Body<T> body) {
        try {
            return call(body);
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }

    private static void startPool() {
        int wanted = size();
        if (STARTED.get() >= wanted) {
            return;
        }
        int n;
        while ((n = STARTED.get()) < wanted) {
            if (STARTED.compareAndSet(n, n + 1)) {
                Thread.ofPlatform().daemon().name("dlpack4j-python-" + n).start(PythonThreads::work);
            }
        }
    }

    private static void work() {
        while (true) {
            Hop<?> hop = next();
            run(hop);
        }
    }

    private static Hop<?> next() {
        for (int i = 0; i < SPINS; i++) {
            Hop<?> h = QUEUE.poll();
            if (h != null) {
                return h;
            }
            Thread.onSpinWait();
        }
        while (true) {
            try {
                return QUEUE.take();
            } catch (InterruptedException ignored) {
                // pool threads are never meant to stop; an interrupt from outside is ignored
            }
        }
    }

    private static <T> void run(Hop<T> hop) {
        try {
            hop.result = hop.body.run();
        } catch (Throwable t) {
            hop.failure = t;
        } finally {
            hop.done = true;
            LockSupport.unpark(hop.waiter);
        }
    }
}
