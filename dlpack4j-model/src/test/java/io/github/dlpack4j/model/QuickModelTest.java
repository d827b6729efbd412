package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * Whether a model counts as quick (its lone callers and idle workers look before they park) follows
 * its run time, not how long its callers waited: a rare slow call leaves it quick, a model that
 * became slow stops being quick.
 */
class QuickModelTest {
    private static void ran(Recorder r, long nanos) {
        r.batch(new ModelEvents.Batch(), 1, 1, 0, nanos, true);
    }

    @Test
    void aModelIsNotQuickBeforeItsFirstCall() {
        assertThat(new Recorder("m", null).quickModel()).isFalse();
    }

    @Test
    void aModelWhoseCallsTakeLessThanALookIsQuickFromItsFirstSuchCall() {
        Recorder r = new Recorder("m", null);
        ran(r, 5_000_000); // the warm-up: slow
        assertThat(r.quickModel()).isFalse();
        ran(r, 20_000);
        assertThat(r.quickModel()).isTrue();
    }

    @Test
    void aModelWhoseCallsTakeTwiceALookIsQuick() {
        // The serving example's mlp on a slow day of the project's VM: its two wake-ups when both
        // sides park are still a large part of such a call.
        Recorder r = new Recorder("m", null);
        for (int i = 0; i < 1000; i++) {
            ran(r, 2 * Look.NANOS + (i % 7) * 5_000);
        }
        assertThat(r.quickModel()).isTrue();
        // its look: a look's time more than twice the quick run time, between the calls' 100 and 130 µs
        assertThat(r.answerLookNanos()).isBetween(Look.NANOS + 2 * 100_000, Look.NANOS + 2 * 130_000);
    }

    @Test
    void aModelWhoseCallsTakeFourLooksIsNotQuick() {
        Recorder r = new Recorder("m", null);
        ran(r, Recorder.QUICK_NANOS);
        assertThat(r.quickModel()).isFalse();
        assertThat(r.answerLookNanos()).isEqualTo(Look.NANOS);
        ran(r, Recorder.QUICK_NANOS - 1);
        assertThat(r.quickModel()).isTrue();
    }

    @Test
    void rareSlowCallsLeaveAQuickModelQuick() {
        Recorder r = new Recorder("m", null);
        for (int i = 0; i < 1000; i++) {
            ran(r, i % 50 == 49 ? 2_000_000 : 20_000); // one call in 50 takes 2 ms
        }
        assertThat(r.quickModel()).isTrue();
    }

    @Test
    void aModelWhoseCallsAllBecameSlowStopsBeingQuick() {
        Recorder r = new Recorder("m", null);
        ran(r, 20_000);
        for (int i = 0; i < 80; i++) {
            ran(r, 1_000_000);
        }
        assertThat(r.quickModel()).isFalse();
        ran(r, 30_000);
        assertThat(r.quickModel()).as("quick again at once").isTrue();
    }

    @Test
    void aLoneCallerLooksForItsAnswerALookMoreThanTwiceTheModelsQuickRunTime() {
        Recorder r = new Recorder("m", null);
        assertThat(r.answerLookNanos()).as("before any call").isEqualTo(Look.NANOS);
        ran(r, 20_000);
        assertThat(r.answerLookNanos()).isEqualTo(Look.NANOS + 40_000);
        ran(r, 45_000); // a call stretched near the look: the floor rises by a sixteenth of itself at most
        assertThat(r.answerLookNanos()).isEqualTo(Look.NANOS + 2 * (20_000 + 20_000 / 16));
        for (int i = 0; i < 80; i++) {
            ran(r, 1_000_000);
        }
        assertThat(r.answerLookNanos()).as("a slow model's callers do not look at all").isEqualTo(Look.NANOS);
    }
}
