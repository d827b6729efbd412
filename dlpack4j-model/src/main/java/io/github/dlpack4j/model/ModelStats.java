package io.github.dlpack4j.model;

import java.time.Duration;

/**
 * What a {@link PythonModel} has done since it was built: exact counters, and the distribution of
 * waits and model calls.
 *
 * <p>{@code requests} counts admitted calls of {@code predict}, {@code submit}, {@code run},
 * {@code runAsync} and streams of {@code stream} (not those refused
 * by the signature check, a full queue or {@code close()}, and not the warm-up); each ends as
 * {@code answered}, {@code failed} (the model raised, or its output broke the declared signature),
 * {@code timedOut}, or cancelled by its caller: a cancel of the future, an interrupt of
{@code predict} before the answer, or a completion of the future from outside ({@code complete},
{@code orTimeout}, {@code completeOnTimeout}); a cancelled request counts in {@code requests} only,
so with cancels {@code requests} exceeds {@code answered + failed + timedOut}. {@code rejected} counts
 * the calls refused because the queue was full (for streams: {@code maxQueue} plus {@code workers}
 * streams open). A stream ends as {@code answered} when its generator ended, {@code failed} when it
 * raised or the model was closed under it, {@code timedOut}, or cancelled by its subscriber; a
 * stream's steps are not {@code batches}. Percentiles come from a histogram of every value
 * since the build with buckets 1/16 of a power of two wide: each is the upper bound of its bucket, at
 * most 6.25% above the true value.
 *
 * @param requests         calls admitted
 * @param answered         calls answered with the model's outputs
 * @param failed           calls that failed with the model's error or a broken output signature
 * @param rejected         calls refused at once because the queue was full
 * @param timedOut         calls whose deadline passed, waiting or running
 * @param batches          model calls, reruns of a failed batch's requests one by one included
 * @param largestBatchRows the most rows one model call has had
 * @param queueWaitP50     the median time from admission to the start of the request's model call
 * @param queueWaitP99     its 99th percentile
 * @param runP50           the median time of one model call (with its inputs' and outputs' exchange)
 * @param runP99           its 99th percentile
 * @param streamItems      the items that streams ({@link PythonModel#stream}) handed to their subscribers
 * @param firstItemP50     the median time from a stream's admission to its first item
 * @param firstItemP99     its 99th percentile
 */
public record ModelStats(long requests, long answered, long failed, long rejected, long timedOut,
                         long batches, int largestBatchRows, Duration queueWaitP50, Duration queueWaitP99,
                         Duration runP50, Duration runP99, long streamItems, Duration firstItemP50,
                         Duration firstItemP99) {
}
