package io.github.dlpack4j.bench;

import java.util.concurrent.Callable;

/** Timings taken inside one fork, after JMH's measurement, for the {@code [in-fork]} ratios. */
final class InFork {
    private InFork() {}

    /** {@return the ns per call of the best of five rounds of at least {@code roundMillis} ms each} */
    static double nanosPerCall(Callable<?> call, long roundMillis) {
        double best = Double.MAX_VALUE;
        try {
            for (int round = 0; round < 5; round++) {
                long calls = 0;
                long start = System.nanoTime();
                long elapsed;
                do {
                    call.call();
                    calls++;
                    elapsed = System.nanoTime() - start;
                } while (elapsed < roundMillis * 1_000_000L);
                best = Math.min(best, (double) elapsed / calls);
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        return best;
    }
}
