package io.github.dlpack4j.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;

import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.TaskCompletionListener;

/**
 * What one task of a {@link BatchInference} runs over its partition: batches packed, the model
 * called, output rows written, one batch at a time as Spark asks for the rows.
 */
final class InferenceTask implements FlatMapFunction<Iterator<InternalRow>, InternalRow> {
    private static final long serialVersionUID = 1L;

    private final StructType rowsSchema;
    private final List<TensorColumn> packed;
    private final int[] inputs;
    private final int[] passThrough;
    private final List<TensorColumn> outputs;
    private final List<TensorColumn> written;
    private final String key;
    private final PythonModel model;
    private final int batchSize;
    private final InferenceMetrics metrics;
    /** The output rows' schema. */
    private final StructType outputSchema;

    InferenceTask(StructType rowsSchema, List<TensorColumn> packed, List<TensorColumn> inputs,
                  List<TensorColumn> passThrough, List<TensorColumn> outputs, String key, PythonModel model,
                  int batchSize, InferenceMetrics metrics) {
        this.rowsSchema = rowsSchema;
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
        this.outputSchema = TensorsToRows.of(written).schema(); // checks the output columns on the driver already
    }

    StructType outputSchema() {
        return outputSchema;
    }

    @Override
    public Iterator<InternalRow> call(Iterator<InternalRow> rows) {
        Python python = ExecutorPython.get();
        PyObject callable = ExecutorPython.model(model);
        if (metrics != null) {
            metrics.taskStarted();
        }
        Scoring scoring = new Scoring(rows, python, callable);
        TaskContext task = TaskContext.get();
        if (task != null) {
            TaskCompletionListener done = t -> scoring.release(); // a failed or cut-short task too
            task.addTaskCompletionListener(done);
        }
        return scoring;
    }

    /** The output rows of one partition. */
    private final class Scoring implements Iterator<InternalRow> {
        private final Iterator<InternalRow> rows;
        private final Python python;
        private final PyObject callable;
        private final PythonHelpers helpers;
        private final List<String> outputNames = outputs.stream().map(TensorColumn::name).toList();
        private final RowsToTensors packer = RowsToTensors.of(rowsSchema, packed, key);
        private final TensorsToRows writer = TensorsToRows.of(written);
        private Iterator<InternalRow> current = Collections.emptyIterator();
        private RowBatch batch;
        private List<ManagedTensor> results = List.of();
        private long batches;

        Scoring(Iterator<InternalRow> rows, Python python, PyObject callable) {
            this.rows = rows;
            this.python = python;
            this.callable = callable;
            this.helpers = PythonHelpers.of(python);
        }

        @Override
        public boolean hasNext() {
            while (!current.hasNext()) {
                release();
                if (!rows.hasNext()) {
                    return false;
                }
                boolean timed = metrics != null && batches++ % InferenceMetrics.TIMED_EVERY == InferenceMetrics.TIMED_EVERY - 1;
                batch = packer.next(rows, batchSize, timed);
                long[] nanos = new long[2];
                results = score(batch, nanos);
                List<Tensor> columns = new ArrayList<>();
                for (int i : passThrough) {
                    columns.add(batch.tensor(i));
                }
                results.forEach(m -> columns.add(m.tensor()));
                long unpack = timed ? writer.timeRows(columns) : -1;
                current = writer.rows(columns);
                if (metrics != null) {
                    metrics.batch(batch.rows(), nanos[0], nanos[1], batch.packNanos(), unpack);
                }
            }
            return true;
        }

        @Override
        public InternalRow next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            return current.next();
        }

        /**
         * Runs the model on a batch; {@code nanos} gets the model's time and the exchange's (the rest
         * of the GIL scope, and taking the GIL).
         */
        private List<ManagedTensor> score(RowBatch b, long[] nanos) {
            long start = System.nanoTime();
            List<ManagedTensor> imported = new ArrayList<>(outputs.size());
            python.withGil(() -> {
                PyObject[] args = new PyObject[inputs.length];
                try {
                    for (int i = 0; i < inputs.length; i++) {
                        args[i] = PythonDlpack.toPython(b.tensor(inputs[i]));
                    }
                    long called = System.nanoTime();
                    try (PyObject result = callable.call((Object[]) args)) {
                        nanos[0] = System.nanoTime() - called;
                        try (PyObject each = helpers.outputs(model.name(), result, outputNames)) {
                            for (int j = 0; j < outputs.size(); j++) {
                                try (PyObject o = each.get(j)) {
                                    imported.add(PythonDlpack.fromDlpack(o));
                                }
                                check(outputs.get(j), imported.get(j).tensor(), b.rows());
                            }
                        }
                    }
                } catch (RuntimeException | Error e) {
                    imported.forEach(ManagedTensor::close);
                    throw e;
                } finally {
                    for (PyObject a : args) {
                        if (a != null) {
                            a.close();
                        }
                    }
                }
            });
            nanos[1] = System.nanoTime() - start - nanos[0];
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

        /** Closes the batch and the model's outputs, once their rows were read. */
        void release() {
            current = Collections.emptyIterator();
            results.forEach(ManagedTensor::close);
            results = List.of();
            if (batch != null) {
                batch.close();
                batch = null;
            }
        }
    }
}
