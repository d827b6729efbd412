package io.github.dlpack4j.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;

import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.TaskCompletionListener;

/**
 * What one task of a {@link BatchInference} runs over its partition: batches packed, the model
 * called through the executor's runtime ({@link ExecutorPython#model}), output rows written, one
 * batch at a time as Spark asks for the rows.
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
        io.github.dlpack4j.model.PythonModel runtime = ExecutorPython.model(model, outputs);
        if (metrics != null) {
            metrics.taskStarted();
        }
        Scoring scoring = new Scoring(rows, runtime);
        TaskContext task = TaskContext.get();
        if (task != null) {
            TaskCompletionListener done = t -> scoring.close(); // a failed or cut-short task too
            task.addTaskCompletionListener(done);
        }
        return scoring;
    }

    /** The output rows of one partition. */
    private final class Scoring implements Iterator<InternalRow> {
        private final Iterator<InternalRow> rows;
        private final io.github.dlpack4j.model.PythonModel runtime;
        /** The inputs' names in the runtime's calls, in the model's order, then the clock's. */
        private final List<String> names;
        /** Where the model's wrapper writes the nanoseconds of its call ({@link PythonHelpers}). */
        private final Tensor clock = Tensor.zeros(DataType.INT64, 1);
        private final RowsToTensors packer = RowsToTensors.of(rowsSchema, packed, key);
        private final TensorsToRows writer = TensorsToRows.of(written);
        private Iterator<InternalRow> current = Collections.emptyIterator();
        private RowBatch batch;
        private List<Tensor> results = List.of();
        private long batches;

        Scoring(Iterator<InternalRow> rows, io.github.dlpack4j.model.PythonModel runtime) {
            this.rows = rows;
            this.runtime = runtime;
            List<String> n = new ArrayList<>();
            for (int i : inputs) {
                n.add(unique(n, packed.get(i).name()));
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
                columns.addAll(results);
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
         * Runs the model on a batch through the runtime; {@code nanos} gets the model's time (its
         * Python call, which its wrapper writes into the clock) and the exchange's (the rest of the
         * runtime's call: the hand-off to the runtime's thread, the inputs exported and the outputs
         * imported, taking the GIL).
         */
        private List<Tensor> score(RowBatch b, long[] nanos) {
            Map<String, Tensor> in = new LinkedHashMap<>();
            for (int i = 0; i < inputs.length; i++) {
                in.put(names.get(i), b.tensor(inputs[i]));
            }
            in.put(names.getLast(), clock);
            clock.setLong(0, 0); // stays 0 where the wrapper finds neither torch nor NumPy to write it with
            long start = System.nanoTime();
            Map<String, Tensor> out = runtime.predict(in);
            long total = System.nanoTime() - start;
            List<Tensor> imported = new ArrayList<>(out.values());
            try {
                for (int j = 0; j < outputs.size(); j++) {
                    check(outputs.get(j), imported.get(j), b.rows());
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

        /** Closes the batch and the model's outputs, once their rows were read. */
        void release() {
            current = Collections.emptyIterator();
            results.forEach(Tensor::close);
            results = List.of();
            if (batch != null) {
                batch.close();
                batch = null;
            }
        }

        /** Releases what {@link #release()} does, and the clock: the task is over. */
        void close() {
            release();
            clock.close();
        }
    }
}
