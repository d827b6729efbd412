package io.github.dlpack4j.spark;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;

import io.github.dlpack4j.Device;
import io.github.dlpack4j.Tensor;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeArrayWriter;
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * Turns a batch's tensors (a model's outputs, say) into rows: each {@link TensorColumn} reads its
 * tensor, {@code [rows]} or {@code [rows, length]} of the column's dtype, and row {@code r} of the
 * output holds row {@code r} of every tensor. The values are read from the tensors' own memory
 * (torch's, for a model's output imported with {@code PythonDlpack.fromDlpack}) straight into
 * Spark's unsafe rows, one move per array; a tensor that is not compact and row-major is copied
 * first.
 */
public final class TensorsToRows {
    private final List<TensorColumn> columns;
    private final SparkTypes[] types;
    private final StructType schema;

    private TensorsToRows(List<TensorColumn> columns) {
        this.columns = List.copyOf(columns);
        types = new SparkTypes[this.columns.size()];
        StructField[] fields = new StructField[types.length];
        for (int c = 0; c < types.length; c++) {
            types[c] = SparkTypes.of(this.columns.get(c).elementType(), this.columns.get(c).name());
            fields[c] = this.columns.get(c).field();
        }
        schema = new StructType(fields);
    }

    /**
     * The rows of these columns.
     *
     * @param columns the output columns, in the order of the rows' fields
     * @return the converter
     */
    public static TensorsToRows of(List<TensorColumn> columns) {
        return new TensorsToRows(Objects.requireNonNull(columns, "columns"));
    }

    /** {@return the rows' schema: each column's field, not nullable} */
    public StructType schema() {
        return schema;
    }

    /** {@return the columns, in the order of the rows' fields} */
    public List<TensorColumn> columns() {
        return columns;
    }

    /**
     * The rows of a batch. The tensors must stay open until the iterator is done: the rows are read
     * from them as they are asked for. The iterator returns the same row object each time, over
     * fresh values, as Spark's own operators do; {@code copy()} a row to keep it.
     *
     * @param tensors one tensor per column, in column order, on the CPU; all of the same first dimension
     * @return the rows
     * @throws IllegalArgumentException naming the column, if a tensor's dtype or shape is not the column's
     */
    public Iterator<InternalRow> rows(List<Tensor> tensors) {
        Source source = source(tensors);
        return new Iterator<>() {
            private int next;

            @Override
            public boolean hasNext() {
                if (next < source.rows) {
                    return true;
                }
                source.closeCopies();
                return false;
            }

            @Override
            public InternalRow next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                return source.write(next++);
            }
        };
    }

    /**
     * Writes every row of {@code tensors} once and drops them; {@return the nanoseconds that took}
     * (what {@link #rows} costs per batch, without the reader of the rows).
     */
    long timeRows(List<Tensor> tensors) {
        Source source = source(tensors);
        long start = System.nanoTime();
        for (int r = 0; r < source.rows; r++) {
            source.write(r);
        }
        long nanos = System.nanoTime() - start;
        source.closeCopies();
        return nanos;
    }

    private Source source(List<Tensor> tensors) {
        Objects.requireNonNull(tensors, "tensors");
        if (tensors.size() != columns.size()) {
            throw new IllegalArgumentException(tensors.size() + " tensors for " + columns.size() + " columns "
                    + columns.stream().map(TensorColumn::name).toList());
        }
        long rows = -1;
        for (int c = 0; c < columns.size(); c++) {
            Tensor t = tensors.get(c);
            TensorColumn col = columns.get(c);
            long n = t.ndim() > 0 ? t.shape()[0] : -1;
            if (!t.dtype().equals(col.dtype()) || !Arrays.equals(t.shape(), col.shape(n)) || !t.device().equals(Device.CPU)) {
                throw new IllegalArgumentException("column " + col.name() + " needs a CPU tensor of " + col.describe()
                        + ", not " + t.dtype() + " " + Arrays.toString(t.shape()) + " on " + t.device());
            }
            if (rows >= 0 && n != rows) {
                throw new IllegalArgumentException("column " + col.name() + " has " + n + " rows, column "
                        + columns.get(0).name() + " " + rows);
            }
            rows = n;
        }
        return new Source(tensors, (int) rows);
    }

    /** The tensors of one batch, read into one reused row. */
    private final class Source {
        final int rows;
        final MemorySegment[] values;
        final Tensor[] copies;
        final UnsafeRowWriter writer;
        final UnsafeArrayWriter[] arrays;

        Source(List<Tensor> tensors, int rows) {
            this.rows = rows;
            int n = columns.size();
            values = new MemorySegment[n];
            copies = new Tensor[n];
            writer = new UnsafeRowWriter(n, arrayBytes());
            arrays = new UnsafeArrayWriter[n];
            for (int c = 0; c < n; c++) {
                Tensor t = tensors.get(c);
                if (!t.isContiguous()) {
                    t = copies[c] = t.copy();
                }
                long bytes = (long) rows * columns.get(c).valuesPerRow() * types[c].size;
                // The tensor's memory, unchecked: the caller keeps the tensor open while the rows are
                // read (a checked segment would cost a shared arena, and its close a handshake with
                // every thread, per batch); the copies above live until closeCopies().
                values[c] = bytes == 0 ? MemorySegment.NULL : MemorySegment.ofAddress(t.dataPointer()).reinterpret(bytes);
                if (columns.get(c).isArray()) {
                    arrays[c] = new UnsafeArrayWriter(writer, types[c].size);
                }
            }
        }

        private int arrayBytes() {
            int bytes = 0;
            for (int c = 0; c < columns.size(); c++) {
                if (columns.get(c).isArray()) {
                    int n = columns.get(c).length();
                    bytes += UnsafeArrayData.calculateHeaderPortionInBytes(n) + ((n * types[c].size + 7) & ~7);
                }
            }
            return bytes;
        }

        InternalRow write(int r) {
            writer.reset();
            writer.zeroOutNullBytes();
            for (int c = 0; c < values.length; c++) {
                TensorColumn col = columns.get(c);
                SparkTypes type = types[c];
                if (!col.isArray()) {
                    type.tensorToScalar(values[c], (long) r * type.size, writer, c);
                    continue;
                }
                int length = col.length();
                long from = (long) r * length * type.size;
                int start = writer.cursor();
                arrays[c].initialize(length);
                if (type == SparkTypes.BOOLEAN) {
                    for (int i = 0; i < length; i++) {
                        arrays[c].write(i, values[c].get(JAVA_BYTE, from + i) != 0);
                    }
                } else {
                    // initialize() laid out the array from `start`: its length, null bits, then the values.
                    long to = start - Platform.BYTE_ARRAY_OFFSET + UnsafeArrayData.calculateHeaderPortionInBytes(length);
                    MemorySegment.copy(values[c], from, MemorySegment.ofArray(writer.getBuffer()), to,
                            (long) length * type.size);
                }
                writer.setOffsetAndSizeFromPreviousCursor(c, start);
            }
            return writer.getRow();
        }

        void closeCopies() {
            for (Tensor t : copies) {
                if (t != null) {
                    t.close();
                }
            }
        }
    }
}
