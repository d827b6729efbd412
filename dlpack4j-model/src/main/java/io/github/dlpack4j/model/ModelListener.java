package io.github.dlpack4j.model;

/**
 * Told of each thing a {@link PythonModel} counts in its {@link ModelStats}, as it happens: a hook for
 * a metrics library ({@link PythonModel.Builder#listener}). Its methods run on the thread that did
 * the work (a model's thread, a caller, a deadline's timer): they must be quick and must not throw
 * (what one throws is dropped). Each method does nothing unless overridden.
 */
public interface ModelListener {
    /**
     * A request's model call starts.
     *
     * @param nanos how long the request waited in the queue since its admission (0 for a call run
     *              on its caller's thread)
     */
    default void waited(long nanos) {
    }

    /**
     * One model call ran (a batch, or one request).
     *
     * @param rows  its rows
     * @param nanos how long it took, with its inputs' and outputs' exchange
     */
    default void ran(long rows, long nanos) {
    }

    /** A request was answered with the model's outputs. */
    default void answered() {
    }

    /** A request failed with the model's error or an output that broke the declared signature. */
    default void failed() {
    }

    /** A call was refused at once because the queue was full. */
    default void rejected() {
    }

    /** A request's deadline passed, waiting or running. */
    default void timedOut() {
    }
}
