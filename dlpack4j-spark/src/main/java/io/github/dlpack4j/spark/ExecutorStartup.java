package io.github.dlpack4j.spark;

import java.io.Serializable;

/**
 * How one executor JVM got ready for its first task of a {@link BatchInference}: when it started,
 * when the warm-up ({@link ExecutorWarmup}) began and finished each of its steps, and when its first
 * task started and had its model. Each time is the executor's wall clock in milliseconds since the
 * epoch ({@link System#currentTimeMillis()}), so that the driver can put the executors' steps beside
 * its own on one machine; {@code -1} stands for a step that this JVM did not take, or had not
 * finished by the time its first task had its model. The warm-up's steps run one after the other on
 * its thread (Python, the modules, the models, then {@code pyarrow.parquet} for the Parquet route's
 * writer), Arrow's library on a thread of its own beside them; a step that a task needed first the
 * task did itself, or waited for. {@link InferenceMetrics#executorStartups()} gathers them from the
 * first task of each JVM.
 *
 * @param pid             the executor JVM's process id
 * @param jvmStarted      when the JVM started
 * @param warmUpStarted   when the warm-up began (the executor's plugins were made); -1 without the warm-up
 * @param pythonStarted   when the JVM's Python had started, by the warm-up or by a task
 * @param modulesImported when the warm-up had imported its modules ({@value ExecutorWarmup#MODULES});
 *                        -1 without the warm-up
 * @param modelsBuilt     when the warm-up had built the models it was given ({@link BatchInference#warmUp});
 *                        -1 when it was given none
 * @param arrowLoaded     when Arrow's dataset library had loaded; -1 when this JVM had not loaded it
 *                        by the end of its first task (the row route needs none)
 * @param firstTask       when the JVM's first task started
 * @param firstModel      when that task had its model and began to score
 */
public record ExecutorStartup(long pid, long jvmStarted, long warmUpStarted, long pythonStarted,
                              long modulesImported, long modelsBuilt, long arrowLoaded, long firstTask,
                              long firstModel) implements Serializable {
}
