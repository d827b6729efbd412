package io.github.dlpack4j.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;

/**
 * What a task of either route of a {@link BatchInference} needs to know, made on the driver and
 * sent with the task: the tensor columns it reads, which of them are the model's inputs and which
 * pass through, the outputs, the columns it writes, the key, the model, the batch size and where
 * it counts what it did.
 */
abstract class TaskPlan implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The tensor columns read, each once: the inputs, then the pass-through columns not among them. */
    final List<TensorColumn> packed;
    /** The model's inputs, as indices into {@link #packed}, in the model's order. */
    final int[] inputs;
    /** The pass-through columns, as indices into {@link #packed}. */
    final int[] passThrough;
    /** The model's outputs, in order. */
    final List<TensorColumn> outputs;
    /** The columns written: the pass-through columns, then the outputs. */
    final List<TensorColumn> written;
    /** The column that names a refused row; null for none. */
    final String key;
    /** The model. */
    final ExecutorModel model;
    /** The most rows per batch. */
    final int batchSize;
    /** Where the tasks count what they did; null for none. */
    final InferenceMetrics metrics;

    TaskPlan(List<TensorColumn> packed, List<TensorColumn> inputs, List<TensorColumn> passThrough,
             List<TensorColumn> outputs, String key, ExecutorModel model, int batchSize, InferenceMetrics metrics) {
        this.packed = packed;
        this.inputs = inputs.stream().mapToInt(packed::indexOf).toArray();
        this.passThrough = passThrough.stream().mapToInt(packed::indexOf).toArray();
        this.outputs = outputs;
        List<TensorColumn> w = new ArrayList<>(passThrough);
        w.addAll(outputs);
        this.written = List.copyOf(w);
        this.key = key;
        this.model = model;
        this.batchSize = batchSize;
        this.metrics = metrics;
    }

    /** {@return the model's input columns, in the model's order} */
    List<TensorColumn> inputColumns() {
        return java.util.Arrays.stream(inputs).mapToObj(packed::get).toList();
    }
}
