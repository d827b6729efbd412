package io.github.dlpack4j.spark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

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
final class InferenceTask extends TaskPlan implements FlatMapFunction<Iterator<InternalRow>, InternalRow> {
    private static final long serialVersionUID = 1L;

    private final StructType rowsSchema;
    /** The output rows' schema. */
    private final StructType outputSchema;

    InferenceTask(StructType rowsSchema, List<TensorColumn> packed, List<TensorColumn> inputs,
                  List<TensorColumn> passThrough, List<TensorColumn> outputs, String key, ExecutorModel model,
                  int batchSize, InferenceMetrics metrics) {
        super(packed, inputs, passThrough, outputs, key, model, batchSize, metrics);
        this.rowsSchema = rowsSchema;
        this.outputSchema = TensorsToRows.of(written).schema(); // checks the output columns on the driver already
    }

    StructType outputSchema() {
        return outputSchema;
    }

    @Override
    public Iterator<InternalRow> call(Iterator<InternalRow> rows) {
        ExecutorPython.taskStarted();
        BatchScorer scorer = new BatchScorer(model, inputColumns(), outputs, metrics);
        if (metrics != null) {
            metrics.taskStarted();
        }
        Scoring scoring = new Scoring(rows, scorer);
        TaskContext task = TaskContext.get();
        long cpu = ParquetTask.processCpuNanos();
        if (task != null) {
            TaskCompletionListener done = t -> {
                scoring.close(); // a failed or cut-short task too
                if (metrics != null) {
                    metrics.processCpu(ParquetTask.processCpuNanos() - cpu);
                }
            };
            task.addTaskCompletionListener(done);
        }
        return scoring;
    }

    /** The output rows of one partition. */
    private final class Scoring implements Iterator<InternalRow> {
        private final Iterator<InternalRow> rows;
        private final BatchScorer scorer;
        private final RowsToTensors packer = RowsToTensors.of(rowsSchema, packed, key);
        private final TensorsToRows writer = TensorsToRows.of(written);
        private Iterator<InternalRow> current = Collections.emptyIterator();
        private RowBatch batch;
        private List<Tensor> results = List.of();
        private long batches;

        Scoring(Iterator<InternalRow> rows, BatchScorer scorer) {
            this.rows = rows;
            this.scorer = scorer;
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
                List<Tensor> in = new ArrayList<>();
                for (int i : inputs) {
                    in.add(batch.tensor(i));
                }
                results = scorer.score(in, batch.rows(), nanos);
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

        /** Releases what {@link #release()} does, and the scorer's clock: the task is over. */
        void close() {
            release();
            scorer.close();
        }
    }
}
