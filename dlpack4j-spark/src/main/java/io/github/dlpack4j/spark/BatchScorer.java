package io.github.dlpack4j.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.model.PythonModel;

/**
 * One task's calls of the executor's model, batch by batch, for both routes of a
 * {@link BatchInference}: the inputs named for the runtime, the task's clock that the model's
 * wrapper writes its own time into ({@link PythonHelpers}), and the outputs checked against their
 * columns. Not thread-safe: one per task.
 */
final class BatchScorer implements AutoCloseable {
    private final ExecutorModel model;
    private final PythonModel runtime;
    private final List<TensorColumn> outputs;
    /** The inputs' names in the runtime's calls, in the model's order, then the clock's. */
    private final List<String> names;
    /** Where the model's wrapper writes the nanoseconds of its call. */
    private final Tensor clock = Tensor.zeros(DataType.INT64, 1);

    /**
     * @param model   the model, as the job names it
     * @param inputs  the model's input columns, in order
     * @param outputs the model's output columns, in order
     * @param metrics where this JVM's start-up is counted, by its first task; null for none
     */
    BatchScorer(ExecutorModel model, List<TensorColumn> inputs, List<TensorColumn> outputs, InferenceMetrics metrics) {
        this.model = model;
        this.outputs = outputs;
        this.runtime = ExecutorPython.model(model, outputs);
        ExecutorPython.Startup startup = ExecutorPython.takeStartup();
        if (metrics != null && startup != null) {
            metrics.startup(startup);
        }
        List<String> n = new ArrayList<>();
        for (TensorColumn c : inputs) {
            n.add(unique(n, c.name()));
        }
        n.add(unique(n, "clock"));
        this.names = List.copyOf(n);
    }

    /** {@return {@code name}, or it with a suffix that {@code taken} lacks: an input column may be given twice} */
    private static String unique(List<String> taken, String name) {
        String n = name;
        for (int k = 2; taken.contains(n); k++) {
            n = name + "#" + k;
        }
        return n;
    }

    /**
     * Runs the model on a batch through the runtime; {@code nanos} gets the model's time (its
     * Python call, which its wrapper writes into the clock) and the exchange's (the rest of the
     * runtime's call: the hand-off to the runtime's thread, the inputs exported and the outputs
     * imported, taking the GIL).
     *
     * @param inputs the batch's input tensors, in the model's order
     * @param rows   the batch's rows
     * @param nanos  gets the model's and the exchange's nanoseconds
     * @return the outputs, in order, each checked against its column; the caller closes them
     * @throws IllegalStateException naming the output whose dtype or shape is not its column's
     */
    List<Tensor> score(List<Tensor> inputs, int rows, long[] nanos) {
        Map<String, Tensor> in = new LinkedHashMap<>();
        for (int i = 0; i < inputs.size(); i++) {
            in.put(names.get(i), inputs.get(i));
        }
        in.put(names.getLast(), clock);
        clock.setLong(0, 0); // stays 0 where the wrapper finds neither torch nor NumPy to write it with
        long start = System.nanoTime();
        Map<String, Tensor> out = runtime.predict(in);
        long total = System.nanoTime() - start;
        List<Tensor> imported = new ArrayList<>(out.values());
        try {
            for (int j = 0; j < outputs.size(); j++) {
                check(outputs.get(j), imported.get(j), rows);
            }
        } catch (RuntimeException | Error e) {
            imported.forEach(Tensor::close);
            throw e;
        }
        nanos[0] = clock.getLong(0);
        nanos[1] = total - nanos[0];
        return imported;
    }

    private void check(TensorColumn output, Tensor t, int rows) {
        if (!t.dtype().equals(output.dtype()) || !Arrays.equals(t.shape(), output.shape(rows))) {
            throw new IllegalStateException("model " + model.name() + ": output " + output.name() + " is "
                    + t.dtype() + " " + Arrays.toString(t.shape()) + " for a batch of " + rows
                    + " rows; the column " + output.sparkType().simpleString() + " needs "
                    + output.dtype() + " " + Arrays.toString(output.shape(rows)));
        }
    }

    /** Frees the clock. */
    @Override
    public void close() {
        clock.close();
    }
}
