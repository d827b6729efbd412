package io.github.dlpack4j.model;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A histogram of durations in nanoseconds, lock-free: values below 16 exactly, every larger one in
 * a bucket 1/16 of its power of two wide, so a percentile is at most 6.25% above the true value.
 */
final class Latency {
    private static final int SUB_BITS = 4;
    private static final int SUB = 1 << SUB_BITS;
    private final AtomicLongArray counts = new AtomicLongArray(64 * SUB);

    void record(long nanos) {
        counts.incrementAndGet(index(Math.max(0, nanos)));
    }

    static int index(long v) {
        if (v < SUB) {
            return (int) v;
        }
        int exp = 63 - Long.numberOfLeadingZeros(v);
        int sub = (int) ((v >>> (exp - SUB_BITS)) & (SUB - 1));
        return (exp - SUB_BITS + 1) * SUB + sub;
    }

    /** {@return the largest value that falls in bucket {@code index}} */
    static long upperBound(int index) {
        if (index < SUB) {
            return index;
        }
        int shift = index / SUB - 1;
        long lower = (long) (SUB + index % SUB) << shift;
        return lower + (1L << shift) - 1;
    }

    /**
     * {@return the {@code p}-quantile (0 &lt; p &lt;= 1) of the values recorded, as its bucket's upper
     * bound; zero when none were}
     */
    Duration percentile(double p) {
        long total = 0;
        for (int i = 0; i < counts.length(); i++) {
            total += counts.get(i);
        }
        if (total == 0) {
            return Duration.ZERO;
        }
        long rank = (long) Math.ceil(p * total);
        long seen = 0;
        for (int i = 0; i < counts.length(); i++) {
            seen += counts.get(i);
            if (seen >= rank) {
                return Duration.ofNanos(upperBound(i));
            }
        }
        // Values recorded while this ran pushed the total on: the last bucket seen holds the rank.
        for (int i = counts.length() - 1; i >= 0; i--) {
            if (counts.get(i) > 0) {
                return Duration.ofNanos(upperBound(i));
            }
        }
        return Duration.ZERO;
    }
}
