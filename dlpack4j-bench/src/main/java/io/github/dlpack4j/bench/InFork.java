package io.github.dlpack4j.bench;

import java.util.concurrent.Callable;

/** Timings taken inside one fork, after JMH's measurement, for the {@code [in-fork]} ratios. */
final class InFork {
    private InFork() {}

    /** {@return the ns per call of the best of five rounds of at least {@code roundMillis} ms each} */
    static double nanosPerCall(Callable<?> call, long roundMillis) {
        return nanosPerCall(5, roundMillis, call)[0];
    }

    /**
     * {@return for each of {@code calls}, the ns per call of its best round} The calls take turns, a
     * round of at least {@code roundMillis} ms each, {@code rounds} times: on a machine whose load
     * comes and goes, each is timed in the same stretches as the others.
     */
    static double[] nanosPerCall(int rounds, long roundMillis, Callable<?>... calls) {
        double[] best = new double[calls.length];
        java.util.Arrays.fill(best, Double.MAX_VALUE);
        try {
            for (int round = 0; round < rounds; round++) {
                for (int i = 0; i < calls.length; i++) {
                    long n = 0;
                    long start = System.nanoTime();
                    long elapsed;
                    do {
                        calls[i].call();
                        n++;
                        elapsed = System.nanoTime() - start;
                    } while (elapsed < roundMillis * 1_000_000L);
                    best[i] = Math.min(best[i], (double) elapsed / n);
                }
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        return best;
    }
}
