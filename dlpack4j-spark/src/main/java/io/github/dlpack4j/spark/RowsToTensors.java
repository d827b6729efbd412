package io.github.dlpack4j.spark;

import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

import java.lang.foreign.MemorySegment;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;

import io.github.dlpack4j.Tensor;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * Packs a partition's rows (Spark's {@link InternalRow}s, as a query's RDD gives them) straight into
 * native tensors of up to {@code batchSize} rows: each {@link TensorColumn} becomes a row-major
 * tensor of its dtype, {@code [rows]} or {@code [rows, length]}. The values of an array column are
 * copied from the row's own bytes in one move per row; nothing is boxed and no Java array is made.
 *
 * <p>A null, a null element of an array, or an array of another length than the column's is
 * refused with an {@link IllegalArgumentException} naming the column and the row: the value of the
 * key column, if there is one (an {@code id}), and the row's position in its partition. Within a
 * Spark job that exception fails the task, and the job, with that message.
 *
 * <p>One instance serves one thread (a task); it counts the rows it has read for those messages.
 */
public final class RowsToTensors {
    private final List<TensorColumn> columns;
    private final int[] ordinals;
    private final SparkTypes[] types;
    private final int keyOrdinal;
    private final String keyName;
    private final DataType keyType;
    /** Rows read so far, the position named in refusals. */
    private long rowsRead;

    private RowsToTensors(StructType schema, List<TensorColumn> columns, String keyColumn) {
        this.columns = List.copyOf(columns);
        if (this.columns.isEmpty()) {
            throw new IllegalArgumentException("no tensor columns to pack");
        }
        ordinals = new int[this.columns.size()];
        types = new SparkTypes[this.columns.size()];
        for (int c = 0; c < ordinals.length; c++) {
            TensorColumn col = this.columns.get(c);
            ordinals[c] = fieldIndex(schema, col.name());
            col.checkReadable(schema.fields()[ordinals[c]]);
            types[c] = SparkTypes.of(col.elementType(), col.name());
        }
        keyName = keyColumn;
        keyOrdinal = keyColumn == null ? -1 : fieldIndex(schema, keyColumn);
        keyType = keyColumn == null ? null : schema.fields()[keyOrdinal].dataType();
    }

    /**
     * A packer for rows of {@code schema}.
     *
     * @param schema    the rows' schema
     * @param columns   the columns to pack, in the order of the batches' tensors
     * @param keyColumn a column of {@code schema} whose value names a refused row (an id), or null
     * @return the packer
     * @throws IllegalArgumentException if a column is missing from {@code schema} or its type is not
     *                                  the column's (a numeric type, or an array of it)
     */
    public static RowsToTensors of(StructType schema, List<TensorColumn> columns, String keyColumn) {
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(columns, "columns");
        return new RowsToTensors(schema, columns, keyColumn);
    }

    private static int fieldIndex(StructType schema, String name) {
        for (int i = 0; i < schema.fields().length; i++) {
            if (schema.fields()[i].name().equals(name)) {
                return i;
            }
        }
        throw new IllegalArgumentException("the rows have no column " + name + "; their columns are "
                + List.of(schema.fieldNames()));
    }

    /** {@return the columns, in the order of the batches' tensors} */
    public List<TensorColumn> columns() {
        return columns;
    }

    /**
     * The batches of {@code rows}, read as they are asked for: each has {@code batchSize} rows but
     * the last, and the caller closes each.
     *
     * @param rows      the partition's rows
     * @param batchSize the most rows per batch
     * @return an iterator of batches
     * @throws IllegalArgumentException if {@code batchSize} is not positive
     */
    public Iterator<RowBatch> batches(Iterator<InternalRow> rows, int batchSize) {
        checkBatchSize(batchSize);
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return rows.hasNext();
            }

            @Override
            public RowBatch next() {
                RowBatch b = RowsToTensors.this.next(rows, batchSize, false);
                if (b == null) {
                    throw new NoSuchElementException();
                }
                return b;
            }
        };
    }

    /**
     * Packs the next rows, up to {@code batchSize} of them.
     *
     * @param rows      the partition's rows
     * @param batchSize the most rows to take
     * @return the batch, which the caller closes; null if {@code rows} had none left
     * @throws IllegalArgumentException naming the column and the row, for a null or an array of
     *                                  another length than the column's
     */
    public RowBatch next(Iterator<InternalRow> rows, int batchSize) {
        checkBatchSize(batchSize);
        return next(rows, batchSize, false);
    }

    private static void checkBatchSize(int batchSize) {
        if (batchSize <= 0) {
            throw new IllegalArgumentException("batchSize must be positive, not " + batchSize);
        }
    }

    /**
     * {@link #next(Iterator, int)}, and when {@code timed} the time the packing alone took: the rows
     * are then copied out of the iterator first (Spark's scan makes them as they are read), and the
     * packing of those copies timed in one go.
     */
    RowBatch next(Iterator<InternalRow> rows, int batchSize, boolean timed) {
        if (!rows.hasNext()) {
            return null;
        }
        MemorySegment[] blocks = new MemorySegment[columns.size()];
        for (int c = 0; c < blocks.length; c++) {
            blocks[c] = NativeBlocks.acquire(rowBytes(c) * batchSize);
        }
        int n = 0;
        long nanos = -1;
        try {
            if (timed) {
                InternalRow[] copies = new InternalRow[batchSize];
                while (n < batchSize && rows.hasNext()) {
                    copies[n++] = rows.next().copy();
                }
                long start = System.nanoTime();
                for (int r = 0; r < n; r++) {
                    pack(copies[r], r, blocks);
                }
                nanos = System.nanoTime() - start;
            } else {
                while (n < batchSize && rows.hasNext()) {
                    pack(rows.next(), n++, blocks);
                }
            }
        } catch (RuntimeException | Error e) {
            for (MemorySegment b : blocks) {
                NativeBlocks.release(b);
            }
            throw e;
        }
        // The blocks hold every row and the shapes fit them: wrapping them cannot fail.
        return new RowBatch(columns, wrap(blocks, n), n, nanos);
    }

    private long rowBytes(int c) {
        return (long) columns.get(c).valuesPerRow() * types[c].size;
    }

    /** Tensors over the filled blocks, each giving its block back when the last of its users lets go. */
    private Tensor[] wrap(MemorySegment[] blocks, int n) {
        Tensor[] tensors = new Tensor[blocks.length];
        for (int c = 0; c < blocks.length; c++) {
            tensors[c] = NativeBlocks.tensor(blocks[c], types[c].dtype, columns.get(c).shape(n));
        }
        return tensors;
    }

    /** Writes {@code row} as row {@code r} of every tensor. */
    private void pack(InternalRow row, int r, MemorySegment[] blocks) {
        rowsRead++;
        for (int c = 0; c < ordinals.length; c++) {
            int ordinal = ordinals[c];
            if (row.isNullAt(ordinal)) {
                throw refusal(row, c, "is null; a tensor column cannot hold nulls (filter or fill them first)");
            }
            if (columns.get(c).isArray()) {
                packArray(row, c, r, blocks[c]);
            } else {
                types[c].scalarToTensor(row, ordinal, blocks[c], (long) r * types[c].size);
            }
        }
    }

    private void packArray(InternalRow row, int c, int r, MemorySegment dst) {
        ArrayData array = row.getArray(ordinals[c]);
        int n = array.numElements();
        int length = columns.get(c).length();
        if (n != length) {
            throw refusal(row, c, "holds " + n + " values; every row needs " + length
                    + ", as the column is a fixed-length array of " + length);
        }
        SparkTypes type = types[c];
        long at = r * rowBytes(c);
        if (array instanceof UnsafeArrayData u && u.getBaseObject() instanceof byte[] bytes) {
            // An unsafe array: its length, a null bit per element in whole words, then the values in
            // native order, all in `bytes` from `start` on: the values move in one copy.
            MemorySegment src = MemorySegment.ofArray(bytes);
            long start = u.getBaseOffset() - Platform.BYTE_ARRAY_OFFSET;
            int header = UnsafeArrayData.calculateHeaderPortionInBytes(n);
            for (long word = 8; word < header; word += 8) {
                if (src.get(JAVA_LONG_UNALIGNED, start + word) != 0) {
                    throw nullElement(row, c, array);
                }
            }
            MemorySegment.copy(src, start + header, dst, at, (long) n * type.size);
        } else {
            for (int i = 0; i < n; i++) {
                if (array.isNullAt(i)) {
                    throw nullElement(row, c, array);
                }
                type.elementToTensor(array, i, dst, at + (long) i * type.size);
            }
        }
    }

    private IllegalArgumentException nullElement(InternalRow row, int c, ArrayData array) {
        int i = 0;
        while (!array.isNullAt(i)) {
            i++;
        }
        return refusal(row, c, "holds a null at index " + i + "; a tensor column cannot hold nulls");
    }

    private IllegalArgumentException refusal(InternalRow row, int c, String problem) {
        TaskContext task = TaskContext.get();
        String position = "row " + (rowsRead - 1) + (task == null ? "" : " of partition " + task.partitionId());
        String which = keyOrdinal < 0 ? position
                : "the row with " + keyName + "=" + (row.isNullAt(keyOrdinal) ? "null" : row.get(keyOrdinal, keyType))
                        + " (" + position + ")";
        return new IllegalArgumentException("column " + columns.get(c).name() + " of " + which + " " + problem);
    }
}
