package io.github.dlpack4j.spark;

import java.io.Serializable;
import java.util.List;
import java.util.Objects;

import org.apache.spark.SparkContext;
import org.apache.spark.util.CollectionAccumulator;
import org.apache.spark.util.LongAccumulator;

/**
 * What the tasks of a {@link BatchInference} did, gathered through Spark accumulators: rows and
 * batches scored, the executors' process ids, and where a batch's time went. Read it on the driver
 * after the job (an action) ran; tasks that Spark ran again count again.
 *
 * <p>Per batch: the model's time (the Python call, the model's own {@code torch.from_dlpack}
 * included); the exchange (the inputs handed to Python, the outputs imported, the Python objects
 * closed, and taking the GIL); the packing of rows into tensors and the writing of rows from
 * tensors. Those two are timed on one batch in eight, on copies of the rows and on a second writing
 * of the output rows, so that Spark's reading of the input and its writing of the output stay out
 * of them, and so do the clock's own costs.
 */
public final class InferenceMetrics implements Serializable {
    private static final long serialVersionUID = 1L;
    /** One batch in this many has its packing and unpacking timed. */
    static final int TIMED_EVERY = 8;

    /** Rows scored. */
    private final LongAccumulator rows;
    /** Batches scored. */
    private final LongAccumulator batches;
    /** Nanoseconds in the model's calls. */
    private final LongAccumulator modelNanos;
    /** Nanoseconds of the exchanges around them. */
    private final LongAccumulator exchangeNanos;
    /** Batches whose packing and unpacking were timed. */
    private final LongAccumulator timedBatches;
    /** Nanoseconds of those packings. */
    private final LongAccumulator packNanos;
    /** Nanoseconds of those unpackings. */
    private final LongAccumulator unpackNanos;
    /** The CPU time of the tasks' JVMs while the tasks ran, every thread of the process counted. */
    private final LongAccumulator processCpuNanos;
    /** Executor JVMs that started their Python in these tasks. */
    private final LongAccumulator startups;
    /** Nanoseconds those JVMs took to start Python. */
    private final LongAccumulator pythonStartNanos;
    /** Nanoseconds those JVMs took to build their models. */
    private final LongAccumulator modelLoadNanos;
    /** Nanoseconds the JVMs of these tasks took to load Arrow's dataset library. */
    private final LongAccumulator arrowLoadNanos;
    /** The process id of each task's JVM. */
    private final CollectionAccumulator<Long> pids;
    /** How each JVM that started in these tasks got ready for its first task. */
    private final CollectionAccumulator<ExecutorStartup> startupTimes;

    private InferenceMetrics(SparkContext sc) {
        rows = sc.longAccumulator("dlpack4j rows");
        batches = sc.longAccumulator("dlpack4j batches");
        modelNanos = sc.longAccumulator("dlpack4j model ns");
        exchangeNanos = sc.longAccumulator("dlpack4j exchange ns");
        timedBatches = sc.longAccumulator("dlpack4j timed batches");
        packNanos = sc.longAccumulator("dlpack4j pack ns");
        unpackNanos = sc.longAccumulator("dlpack4j unpack ns");
        processCpuNanos = sc.longAccumulator("dlpack4j process cpu ns");
        startups = sc.longAccumulator("dlpack4j executor start-ups");
        pythonStartNanos = sc.longAccumulator("dlpack4j python start ns");
        modelLoadNanos = sc.longAccumulator("dlpack4j model load ns");
        arrowLoadNanos = sc.longAccumulator("dlpack4j arrow load ns");
        pids = sc.collectionAccumulator("dlpack4j executor pids");
        startupTimes = sc.collectionAccumulator("dlpack4j executor start-ups");
    }

    /**
     * New metrics, registered with the driver's context.
     *
     * @param sc the application's context
     * @return metrics to pass to {@link BatchInference#transform(org.apache.spark.sql.Dataset, InferenceMetrics)}
     */
    public static InferenceMetrics register(SparkContext sc) {
        return new InferenceMetrics(Objects.requireNonNull(sc, "sc"));
    }

    /** A task started in this JVM. */
    void taskStarted() {
        pids.add(ProcessHandle.current().pid());
    }

    /** The first task of a JVM reports its start-up: Python's, its models', when each step was done. */
    void startup(ExecutorPython.Startup startup) {
        startups.add(1);
        pythonStartNanos.add(startup.pythonNanos());
        modelLoadNanos.add(startup.modelNanos());
        startupTimes.add(startup.times());
    }

    /**
     * How each executor JVM that started in these tasks got ready for its first task: when it
     * started, its warm-up's steps, its first task and that task's model ({@link ExecutorStartup}).
     *
     * @return one per JVM, by process id
     */
    public List<ExecutorStartup> executorStartups() {
        return startupTimes.value().stream().sorted(java.util.Comparator.comparingLong(ExecutorStartup::pid)).toList();
    }

    /** A task loaded Arrow's dataset library into its JVM, the first there. */
    void arrowLoad(long nanos) {
        arrowLoadNanos.add(nanos);
    }

    /**
     * Where the executors' start-up went in these tasks, per executor JVM that started here: e.g.
     * "2 executors started: Python 0.41 s, models 1.92 s, Arrow's library 0.98 s" (mean per JVM), or
     * "no executor started" when every JVM had started before.
     *
     * @return the line
     */
    public String startup() {
        long n = startups.value();
        if (n == 0) {
            return "no executor started";
        }
        return String.format(java.util.Locale.ROOT, "%d executor%s started: Python %.2f s, models %.2f s, Arrow's library "
                        + "%.2f s (each, on average)", n, n == 1 ? "" : "s", pythonStartNanos.value() / 1e9 / n,
                modelLoadNanos.value() / 1e9 / n, arrowLoadNanos.value() / 1e9 / n);
    }

    /** A task ended: its JVM's CPU time, every thread counted, went up by {@code nanos} while it ran. */
    void processCpu(long nanos) {
        processCpuNanos.add(nanos);
    }

    /** A batch was scored; pack and unpack are -1 when they were not timed. */
    void batch(int batchRows, long model, long exchange, long pack, long unpack) {
        rows.add(batchRows);
        batches.add(1);
        modelNanos.add(model);
        exchangeNanos.add(exchange);
        if (pack >= 0 && unpack >= 0) {
            timedBatches.add(1);
            packNanos.add(pack);
            unpackNanos.add(unpack);
        }
    }

    /** {@return the rows scored} */
    public long rows() {
        return rows.value();
    }

    /** {@return the batches scored} */
    public long batches() {
        return batches.value();
    }

    /**
     * The CPU time of the tasks' JVMs while the tasks ran, summed over the tasks: every thread of
     * the process counted (Spark's {@code executorCpuTime} counts the task's thread only, and Arrow's
     * C++ reads, decodes and encodes on threads of its own). A JVM that runs several tasks at once
     * counts its time once per task.
     *
     * @return seconds
     */
    public double processCpuSeconds() {
        return processCpuNanos.value() / 1e9;
    }

    /** {@return the process ids of the JVMs that ran the tasks, ascending, each once} */
    public List<Long> executorPids() {
        return pids.value().stream().distinct().sorted().toList();
    }

    /** {@return the model's mean time per batch, in microseconds} */
    public double modelMicrosPerBatch() {
        return perBatch(modelNanos.value(), batches.value());
    }

    /** {@return the exchange's mean time per batch, in microseconds} */
    public double exchangeMicrosPerBatch() {
        return perBatch(exchangeNanos.value(), batches.value());
    }

    /** {@return the packing's mean time per timed batch, in microseconds; NaN if none was timed} */
    public double packMicrosPerBatch() {
        return perBatch(packNanos.value(), timedBatches.value());
    }

    /** {@return the unpacking's mean time per timed batch, in microseconds; NaN if none was timed} */
    public double unpackMicrosPerBatch() {
        return perBatch(unpackNanos.value(), timedBatches.value());
    }

    /** {@return dlpack4j's share of a batch: packing, exchange and unpacking, in microseconds} */
    public double dlpack4jMicrosPerBatch() {
        return packMicrosPerBatch() + exchangeMicrosPerBatch() + unpackMicrosPerBatch();
    }

    /** {@return {@link #dlpack4jMicrosPerBatch()} as a fraction of {@link #modelMicrosPerBatch()}} */
    public double dlpack4jShareOfModel() {
        return dlpack4jMicrosPerBatch() / modelMicrosPerBatch();
    }

    private static double perBatch(long nanos, long count) {
        return count == 0 ? Double.NaN : nanos / 1e3 / count;
    }

    /** {@return e.g. "per batch: pack 95 µs, exchange 30 µs, unpack 20 µs, model 3100 µs (dlpack4j 4.7% of the model)"} */
    @Override
    public String toString() {
        return String.format(java.util.Locale.ROOT, "per batch: pack %.0f µs, exchange %.0f µs, unpack %.0f µs, model %.0f µs "
                        + "(dlpack4j %.1f%% of the model)", packMicrosPerBatch(), exchangeMicrosPerBatch(),
                unpackMicrosPerBatch(), modelMicrosPerBatch(), 100 * dlpack4jShareOfModel());
    }
}
