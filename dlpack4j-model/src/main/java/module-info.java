/**
 * A Python model as a Java object: {@link io.github.dlpack4j.model.PythonModel} loads a model once
 * into the embedded interpreter and serves it to every thread, with declared inputs and outputs,
 * dynamic batching, a bounded queue, deadlines, per-request failure isolation, stats and JDK Flight
 * Recorder events ({@code io.github.dlpack4j.model.Batch}, {@code .Rejected}, {@code .TimedOut}).
 *
 * <p>On the module path grant native access to {@code io.github.dlpack4j.core} and
 * {@code io.github.dlpack4j.python}, as for the rest of dlpack4j.
 */
module io.github.dlpack4j.model {
    requires transitive io.github.dlpack4j.python;
    requires jdk.jfr;

    exports io.github.dlpack4j.model;
}
