package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

class LookTest {
    /**
     * The time given to a look that must find what happens by its Nth ask: a look pauses between
     * asks, offering its CPU, and one pause may last another thread's time slice on a busy machine.
     */
    private static final long LONG = 10_000_000_000L;

    @Test
    void aLookFindsWhatHappensWhileItLooks() {
        Look look = new Look();
        AtomicInteger asked = new AtomicInteger();
        assertThat(look.lookFor(() -> asked.incrementAndGet() >= 20, false, LONG)).isTrue();
        assertThat(asked).hasValue(20);
    }

    @Test
    void aLookMadeForLongerLooksThatLongBeforeItMisses() {
        Look look = new Look();
        long start = System.nanoTime();
        assertThat(look.lookFor(() -> false, false, 3 * Look.NANOS)).isFalse();
        assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(3 * Look.NANOS);
        long until = System.nanoTime() + 2 * Look.NANOS; // happens past a plain look's time, within this one's
        assertThat(look.lookFor(() -> System.nanoTime() - until >= 0, false, 10_000 * Look.NANOS)).isTrue();
    }

    @Test
    void aLookGivesUpAfterItsTimeAndAfterFourMissesInARowLooksOnceInThirtyTwo() {
        Look look = new Look();
        for (int i = 0; i < Look.GIVE_UP_AFTER; i++) {
            long start = System.nanoTime();
            assertThat(look.lookFor(() -> false)).isFalse();
            assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(Look.NANOS);
        }
        AtomicInteger looks = new AtomicInteger();
        for (int i = 0; i < 10 * Look.RETRY_EVERY; i++) {
            look.lookFor(() -> looks.incrementAndGet() < 0);
        }
        assertThat(looks.get()).as("looks made: each asks many times").isPositive();
        AtomicInteger made = new AtomicInteger();
        for (int i = 0; i < 10 * Look.RETRY_EVERY; i++) {
            look.lookFor(() -> {
                made.incrementAndGet();
                return true; // found at once: a look that pays resets the misses
            });
        }
        assertThat(made.get()).isBetween(10 * Look.RETRY_EVERY - Look.RETRY_EVERY, 10 * Look.RETRY_EVERY);
    }

    @Test
    void whileGivingUpAThreadDoesNotLookAtAll() {
        Look look = new Look();
        for (int i = 0; i < Look.GIVE_UP_AFTER; i++) {
            look.lookFor(() -> false);
        }
        AtomicInteger asked = new AtomicInteger();
        int looked = 0;
        for (int i = 1; i < Look.RETRY_EVERY; i++) {
            if (asked.get() > 0) {
                break;
            }
            look.lookFor(() -> asked.incrementAndGet() < 0);
            looked = i;
        }
        assertThat(looked).as("the skipped looks before the retry").isGreaterThanOrEqualTo(Look.RETRY_EVERY - 2);
    }

    @Test
    void aLookAskedToLookEvenWhileGivingUpLooksAtOnceAndItsHitEndsTheGivingUp() {
        Look look = new Look();
        for (int i = 0; i < Look.GIVE_UP_AFTER; i++) {
            look.lookFor(() -> false);
        }
        AtomicInteger asked = new AtomicInteger();
        assertThat(look.lookFor(() -> asked.incrementAndGet() >= 5, true, LONG)).isTrue();
        assertThat(asked).as("it looked at once, not once in thirty-two").hasValue(5);
        AtomicInteger plain = new AtomicInteger();
        assertThat(look.lookFor(() -> plain.incrementAndGet() > 0)).as("its hit reset the misses").isTrue();
    }

    @Test
    void aLookMadeToGiveUpLaterKeepsLookingThroughThatManyMisses() {
        Look look = new Look(16);
        for (int i = 0; i < 15; i++) {
            look.lookFor(() -> false);
        }
        AtomicInteger asked = new AtomicInteger();
        assertThat(look.lookFor(() -> asked.incrementAndGet() >= 3, false, LONG)).as("15 misses: still looking").isTrue();
        for (int i = 0; i < 16; i++) {
            look.lookFor(() -> false);
        }
        AtomicInteger after = new AtomicInteger();
        look.lookFor(() -> after.incrementAndGet() > 0);
        assertThat(after).as("16 misses: given up").hasValue(0);
    }
}
