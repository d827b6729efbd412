package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.github.dlpack4j.Tensor;

import org.junit.jupiter.api.Test;

class StatsTest {
    @Test
    void aPercentileIsItsBucketsUpperBoundAtMostASixteenthAboveTheValue() {
        for (long v : new long[] {0, 1, 15, 16, 17, 31, 32, 1000, 999_999, 20_000_000, Long.MAX_VALUE / 2}) {
            long bound = Latency.upperBound(Latency.index(v));
            assertThat(bound).isGreaterThanOrEqualTo(v).isLessThanOrEqualTo(v + v / 16);
        }
    }

    @Test
    void percentilesOfRecordedValuesFallInTheirBuckets() {
        Latency l = new Latency();
        assertThat(l.percentile(0.5)).isEqualTo(Duration.ZERO);
        for (int i = 1; i <= 100; i++) {
            l.record(i * 1_000_000L);
        }
        assertThat(l.percentile(0.5).toNanos()).isBetween(50_000_000L, 53_125_000L);
        assertThat(l.percentile(0.99).toNanos()).isBetween(99_000_000L, 105_187_500L);
    }

    @Test
    void statsCountEveryCallExactlyAndTimeTheModelsCalls() {
        try (PythonModel model = PythonModel.builder().python(Models.PY).source(Models.SLOW_OR_FAILING, "make", 0.02).build();
             Tensor good = Tensor.of(new float[] {1}, 1);
             Tensor bad = Tensor.of(new float[] {-1}, 1)) {
            for (int i = 0; i < 4; i++) {
                model.predict(good).close();
            }
            try {
                model.predict(bad);
            } catch (RuntimeException expected) {
                // counted as failed below
            }
            ModelStats s = model.stats();
            assertThat(s.requests()).isEqualTo(5);
            assertThat(s.answered()).isEqualTo(4);
            assertThat(s.failed()).isEqualTo(1);
            assertThat(s.rejected()).isZero();
            assertThat(s.timedOut()).isZero();
            assertThat(s.batches()).isEqualTo(5);
            assertThat(s.largestBatchRows()).isEqualTo(1);
            assertThat(s.runP50()).isBetween(Duration.ofMillis(20), Duration.ofMillis(500));
            assertThat(s.runP99()).isGreaterThanOrEqualTo(s.runP50());
            assertThat(s.queueWaitP99()).isGreaterThanOrEqualTo(s.queueWaitP50()).isLessThan(Duration.ofMillis(500));
        }
    }
}
