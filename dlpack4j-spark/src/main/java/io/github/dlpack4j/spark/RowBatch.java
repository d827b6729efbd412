package io.github.dlpack4j.spark;

import java.util.List;

import io.github.dlpack4j.Tensor;

/**
 * One batch of rows as tensors, one per {@link TensorColumn}, each {@code [rows]} or
 * {@code [rows, length]}, row-major, compact, in native memory (made by {@link RowsToTensors}).
 * The tensors are owning: hand them to Python ({@code PythonDlpack.toPython}) or any DLPack consumer
 * without a copy. {@link #close()} closes them all; their memory is reused for a later batch only
 * once every consumer has let go of it too.
 */
public final class RowBatch implements AutoCloseable {
    private final List<TensorColumn> columns;
    private final Tensor[] tensors;
    private final int rows;
    /** Nanoseconds the packing took, when it was timed; -1 otherwise. */
    private final long packNanos;

    RowBatch(List<TensorColumn> columns, Tensor[] tensors, int rows, long packNanos) {
        this.columns = columns;
        this.tensors = tensors;
        this.rows = rows;
        this.packNanos = packNanos;
    }

    /** {@return the number of rows in this batch: the first dimension of every tensor} */
    public int rows() {
        return rows;
    }

    /** {@return the columns, in the order of {@link #tensor(int)}} */
    public List<TensorColumn> columns() {
        return columns;
    }

    /**
     * The tensor of a column.
     *
     * @param index the column's position in {@link #columns()}
     * @return its tensor, owned by this batch
     * @throws IndexOutOfBoundsException if there is no such column
     */
    public Tensor tensor(int index) {
        return tensors[index];
    }

    /**
     * The tensor of a column.
     *
     * @param column the column's name
     * @return its tensor, owned by this batch
     * @throws IllegalArgumentException if the batch has no such column
     */
    public Tensor tensor(String column) {
        for (int i = 0; i < columns.size(); i++) {
            if (columns.get(i).name().equals(column)) {
                return tensors[i];
            }
        }
        throw new IllegalArgumentException("the batch has no column " + column + "; it has "
                + columns.stream().map(TensorColumn::name).toList());
    }


    long packNanos() {
        return packNanos;
    }

    /** Closes every tensor of the batch. Idempotent. */
    @Override
    public void close() {
        for (Tensor t : tensors) {
            t.close();
        }
    }
}
