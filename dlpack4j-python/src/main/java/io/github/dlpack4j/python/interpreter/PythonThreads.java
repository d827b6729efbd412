package io.github.dlpack4j.python.interpreter;

import java.util.concurrent.ConcurrentLinkedQueue;
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
 *
 * <p><b>The hand-over.</b> Waking a parked thread costs several microseconds, and twice per call
 * (the pool thread, then the virtual thread) it would be most of a short call's cost. So an idle
 * pool thread keeps looking for work for {@value #WORKER_SPIN_NANOS} ns before it parks, and a
 * waiting virtual thread looks for its result for {@value #WAITER_SPIN_NANOS} ns: back-to-back
 * calls never park. At most one pool thread looks at a time (the others park at once), and work is
 * handed to a parked thread only when none is looking: two threads spinning on a 2-core machine
 * would take the core the caller needs, and a queue that gives new work to its oldest waiter (a
 * parked thread) while another spins for it made every call pay a wake-up. Time, not a count of
 * spins, bounds the looking (a spin's length differs tenfold between processors); a pool with no
 * calls parks within that time and then costs no CPU.
 */
public final class PythonThreads {
    /** The system property that sets the pool's size. */
    public static final String SIZE_PROPERTY = "dlpack4j.python.threads";
    /** How long an idle pool thread looks for work before it parks. */
    static final long WORKER_SPIN_NANOS = 50_000;
    /** How long a virtual thread looks for its result before it parks. */
    static final long WAITER_SPIN_NANOS = 20_000;

    private static final ConcurrentLinkedQueue<Hop<?>> QUEUE = new ConcurrentLinkedQueue<>();
    /** Parked pool threads, the next to wake first. */
    private static final ConcurrentLinkedQueue<Thread> PARKED = new ConcurrentLinkedQueue<>();
    /** 1 while a pool thread looks for work without parking, else 0. */
    private static final AtomicInteger SPINNING = new AtomicInteger();
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
        QUEUE.offer(hop);
        // Read after the offer; a pool thread that stops looking clears it before it looks at the
        // queue once more, so that one of the two always sees the other's write.
        if (SPINNING.get() == 0) {
            wakeOne();
        }
        if (!hop.done) {
            long deadline = System.nanoTime() + WAITER_SPIN_NANOS;
            for (int i = 1; !hop.done && (i % 64 != 0 || System.nanoTime() - deadline < 0); i++) {
                Thread.onSpinWait();
            }
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

    /** Unparks the pool thread that parked first, if any. */
    private static void wakeOne() {
        Thread t = PARKED.poll();
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    private static void work() {
        boolean looking = false;
        while (true) {
            looking = run(next(looking));
        }
    }

    /**
     * The next piece of work: taken at once, looked for a while (by one pool thread at a time), or
     * waited for parked.
     *
     * @param looking this thread holds {@link #SPINNING} already (it claimed it as it finished a call)
     */
    private static Hop<?> next(boolean looking) {
        Thread me = Thread.currentThread();
        while (true) {
            if (!looking) {
                Hop<?> h = QUEUE.poll();
                if (h != null) {
                    return h;
                }
                looking = SPINNING.compareAndSet(0, 1);
            }
            if (looking) {
                looking = false;
                long deadline = System.nanoTime() + WORKER_SPIN_NANOS;
                Hop<?> h = QUEUE.poll();
                for (int i = 1; h == null && (i % 64 != 0 || System.nanoTime() - deadline < 0); i++) {
                    Thread.onSpinWait();
                    h = QUEUE.poll();
                }
                SPINNING.set(0);
                // Work offered while this thread was looking woke no one: hand what is left to another.
                if (!QUEUE.isEmpty()) {
                    wakeOne();
                }
                if (h != null) {
                    return h;
                }
            }
            // Queued, then the queue read once more: work offered before this thread could be woken is seen here.
            PARKED.offer(me);
            if (QUEUE.isEmpty()) {
                LockSupport.park(PythonThreads.class);
            }
            PARKED.remove(me); // after a spurious wake-up, or work seen above (a wake meant for it is then harmless)
            Thread.interrupted(); // pool threads are never meant to stop; an interrupt from outside is ignored
        }
    }

    /**
     * Runs {@code hop} and hands back what it gave; returns whether this thread then holds
     * {@link #SPINNING}. It claims the looking before the caller learns the result: a caller's next
     * call, often right after, then finds a thread looking for it and wakes no other.
     */
    private static <T> boolean run(Hop<T> hop) {
        try {
            hop.result = hop.body.run();
        } catch (Throwable t) {
            hop.failure = t;
        }
        boolean looking = SPINNING.compareAndSet(0, 1);
        hop.done = true;
        LockSupport.unpark(hop.waiter);
        return looking;
    }
}
