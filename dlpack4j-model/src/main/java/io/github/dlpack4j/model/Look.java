package io.github.dlpack4j.model;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import io.github.dlpack4j.internal.CpuYield;

/**
 * A bounded look for something about to happen (a request for an idle model thread, an answer for
 * a caller), before the thread parks: waking a parked thread costs more than a small model's call.
 * One thread looks at a time, for at most {@link #NANOS} or the time its caller gives; after
 * {@link #GIVE_UP_AFTER} looks in a row (or as many as it is made with) that found nothing
 * (requests that come further apart, a model slower than the look), it looks only once in
 * {@link #RETRY_EVERY} times, so a service whose calls never come that close burns next to no CPU
 * on it.
 *
 * <p>Between its glances it offers its CPU to any thread waiting to run there ({@link CpuYield}):
 * after a wake-up the looker and the thread it waits for may share one CPU while the other idles,
 * and a look that only spun kept the model's call from running until it gave up. A virtual thread
 * in a loop of mlp calls ({@code ModelBench}, three forks each): +28 to +42 µs a call over a
 * platform thread in the median round when it only spun, +9.5 to +17.4 µs yielding
 * (docs/performance.md).
 */
final class Look {
    static final long NANOS = 50_000;
    static final int GIVE_UP_AFTER = 4;
    static final int RETRY_EVERY = 32;

    private final AtomicBoolean looking = new AtomicBoolean();
    /** The misses in a row after which it gives up. */
    private final int giveUpAfter;
    /** Looks in a row that found nothing; written by the one looker. */
    private volatile int misses;
    /** Looks skipped since the last one made, while giving up; racy, as a hint. */
    private int skipped;

    /** A look that gives up after {@link #GIVE_UP_AFTER} misses in a row. */
    Look() {
        this(GIVE_UP_AFTER);
    }

    /** @param giveUpAfter the misses in a row after which it looks only once in {@link #RETRY_EVERY} times */
    Look(int giveUpAfter) {
        this.giveUpAfter = giveUpAfter;
    }

    /**
     * Spins until {@code happened} is true, at most {@link #NANOS}.
     *
     * @return whether it happened while this thread looked (false: it did not look, or gave up)
     */
    boolean lookFor(BooleanSupplier happened) {
        return lookFor(happened, false);
    }

    /**
     * Spins until {@code happened} is true, at most {@link #NANOS}; with {@code evenGivingUp} also
     * while giving up, for a caller that judges by other means whether a look pays.
     *
     * @return whether it happened while this thread looked (false: it did not look, or gave up)
     */
    boolean lookFor(BooleanSupplier happened, boolean evenGivingUp) {
        return lookFor(happened, evenGivingUp, NANOS);
    }

    /**
     * Spins until {@code happened} is true, at most {@code nanos}; as {@link #lookFor(BooleanSupplier,
     * boolean)} otherwise.
     *
     * @return whether it happened while this thread looked (false: it did not look, or gave up)
     */
    boolean lookFor(BooleanSupplier happened, boolean evenGivingUp, long nanos) {
        if (!evenGivingUp && misses >= giveUpAfter && ++skipped % RETRY_EVERY != 0) {
            return false;
        }
        if (!looking.compareAndSet(false, true)) {
            return false;
        }
        try {
            long until = System.nanoTime() + nanos;
            while (!happened.getAsBoolean()) {
                if (System.nanoTime() - until >= 0) { // a yield may have lasted another thread's time slice
                    misses = misses + 1;
                    return false;
                }
                CpuYield.pause();
            }
            misses = 0;
            return true;
        } finally {
            looking.set(false);
        }
    }
}
