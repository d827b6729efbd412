package io.github.dlpack4j.spark;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.arrow.ArrowTensors;
import io.github.dlpack4j.arrow.NullPolicy;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.BaseRepeatedValueVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.LargeListVector;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;

/**
 * A record batch that Arrow's Parquet reader gave a task of the Parquet route, as the tensors of
 * its columns, without copying: a scalar column's values are a {@code [rows]} tensor, a list
 * column's values buffer a {@code [rows, length]} tensor. It refuses what the row route
 * ({@link RowsToTensors}) refuses, with the same words and the same row: the first row with a null,
 * an array of another length or a null in an array, naming the row by its key and its place in the
 * file.
 */
final class ArrowBatch {
    private ArrowBatch() {
    }

    /**
     * What {@link #check} found in a batch.
     *
     * @param rows    the rows before the first refused one: all of them when none is
     * @param refusal the first refused row's refusal, in the row route's words; null when none is
     */
    record Checked(int rows, IllegalArgumentException refusal) {
    }

    /**
     * Checks {@code root}'s rows as the row route checks them, row by row and column by column,
     * without throwing: a caller that runs the model on the rows before the refused one, batch by
     * batch, fails as the row route does (its model's failure on an earlier batch comes first).
     *
     * @param root     the batch
     * @param dictionaries the dictionaries of the batch's dictionary-encoded columns (the reader)
     * @param columns  the tensor columns, in the order the row route checks them
     * @param key      the key column, or null
     * @param file     the file's name, for the messages
     * @param firstRow the batch's first row's place in the file
     * @return the rows before the first refused one, and its refusal
     */
    static Checked check(VectorSchemaRoot root, DictionaryProvider dictionaries, List<TensorColumn> columns,
                         String key, String file, long firstRow) {
        int rows = root.getRowCount();
        int badRow = rows;
        int badColumn = -1;
        for (int c = 0; c < columns.size(); c++) {
            int r = firstRefused(root.getVector(columns.get(c).name()), columns.get(c), Math.min(badRow + 1, rows));
            if (r < badRow) {
                badRow = r;
                badColumn = c;
            }
        }
        if (badColumn < 0) {
            return new Checked(rows, null);
        }
        TensorColumn c = columns.get(badColumn);
        return new Checked(badRow, refusal(root, dictionaries, c, badRow, problem(root.getVector(c.name()), c, badRow),
                key, file, firstRow));
    }

    /**
     * The tensors of {@code columns} over rows {@code [0, rows)} of {@code root}, which {@link #check}
     * found clean. Each holds a reference to its Arrow buffer until it is closed.
     *
     * @return one owning tensor per column, in order; the caller closes them
     */
    static List<Tensor> tensors(VectorSchemaRoot root, List<TensorColumn> columns, int rows) {
        List<Tensor> tensors = new ArrayList<>();
        try {
            for (TensorColumn c : columns) {
                tensors.add(view(root.getVector(c.name()), c, rows));
            }
            return tensors;
        } catch (RuntimeException | Error e) {
            tensors.forEach(Tensor::close);
            throw e;
        }
    }

    /** {@return the first of rows {@code [0, limit)} that {@code c} refuses in {@code v}, or {@code limit}} */
    private static int firstRefused(FieldVector v, TensorColumn c, int limit) {
        int bad = allValid(v, 0, limit) ? limit : (int) firstNull(v, 0, limit);
        if (!c.isArray()) {
            return bad;
        }
        if (v instanceof FixedSizeListVector f) {
            if (f.getListSize() != c.length()) {
                return 0; // every row holds another number of values
            }
        } else {
            bad = firstOfAnotherLength(v, bad, c.length());
        }
        ValueVector values = child(v);
        if (bad > 0) {
            long from = start(v, 0);
            long end = start(v, bad);
            if (!allValid(values, from, end)) {
                bad = Math.min(bad, rowOf(v, firstNull(values, from, end), bad));
            }
        }
        return bad;
    }

    /**
     * {@return the first of rows {@code [0, limit)} of the list vector {@code v} that holds another
     * number of values than {@code length}, or {@code limit}} The offsets are read in one bulk copy:
     * a read of each through {@link ArrowBuf}'s checked accessors cost more than the model's input
     * a row.
     */
    private static int firstOfAnotherLength(FieldVector v, int limit, int length) {
        if (limit == 0) {
            return 0;
        }
        MemorySegment offsets = segment(v.getOffsetBuffer());
        if (v instanceof LargeListVector) {
            long[] o = new long[limit + 1];
            MemorySegment.copy(offsets, ValueLayout.JAVA_LONG_UNALIGNED, 0, o, 0, limit + 1);
            for (int i = 0; i < limit; i++) {
                if (o[i + 1] - o[i] != length) {
                    return i;
                }
            }
        } else {
            int[] o = new int[limit + 1];
            MemorySegment.copy(offsets, ValueLayout.JAVA_INT_UNALIGNED, 0, o, 0, limit + 1);
            for (int i = 0; i < limit; i++) {
                if (o[i + 1] - o[i] != length) {
                    return i;
                }
            }
        }
        return limit;
    }

    /**
     * {@return whether no value of {@code [from, end)} of {@code v} is null} Its validity bitmap is
     * compared with set bits a byte at a time ({@link MemorySegment#mismatch}), where Arrow's
     * {@code getNullCount()} counts the bits of the whole bitmap, value by value for every read.
     */
    private static boolean allValid(ValueVector v, long from, long end) {
        if (end <= from) {
            return true;
        }
        ArrowBuf validity = v.getValidityBuffer();
        if (validity == null || validity.capacity() == 0) {
            return v.getNullCount() == 0; // a vector of a type without a bitmap (none that a tensor column takes)
        }
        long wholeFrom = (from + 7) / 8;
        long wholeEnd = end / 8;
        if (wholeFrom >= wholeEnd) {
            return firstNull(v, from, end) == end;
        }
        if (firstNull(v, from, wholeFrom * 8) != wholeFrom * 8 || firstNull(v, wholeEnd * 8, end) != end) {
            return false;
        }
        MemorySegment bits = segment(validity);
        for (long at = wholeFrom; at < wholeEnd; at += SET_BITS.byteSize()) {
            long to = Math.min(wholeEnd, at + SET_BITS.byteSize());
            if (MemorySegment.mismatch(bits, at, to, SET_BITS, 0, to - at) != -1) {
                return false;
            }
        }
        return true;
    }

    /** Bytes of set bits, to compare validity bitmaps with. */
    private static final MemorySegment SET_BITS = Arena.global().allocate(4096).fill((byte) -1);

    /** {@return the Arrow buffer's bytes as a segment; valid while the buffer is, which the caller holds} */
    private static MemorySegment segment(ArrowBuf buf) {
        return MemorySegment.ofAddress(buf.memoryAddress()).reinterpret(buf.capacity());
    }

    private static String problem(FieldVector v, TensorColumn c, int row) {
        if (v.isNull(row)) {
            return "is null; a tensor column cannot hold nulls (filter or fill them first)";
        }
        if (!c.isArray()) {
            throw new AssertionError("a scalar value refused but not null");
        }
        long n = length(v, row);
        if (n != c.length()) {
            return "holds " + n + " values; every row needs " + c.length() + ", as the column is a fixed-length array of "
                    + c.length();
        }
        ValueVector values = child(v);
        long from = start(v, row);
        for (long i = from; i < from + n; i++) {
            if (values.isNull((int) i)) {
                return "holds a null at index " + (i - from) + "; a tensor column cannot hold nulls";
            }
        }
        throw new AssertionError("row " + row + " refused, but nothing in it is");
    }

    private static IllegalArgumentException refusal(VectorSchemaRoot root, DictionaryProvider dictionaries,
                                                    TensorColumn c, int row, String problem, String key, String file,
                                                    long firstRow) {
        String position = "row " + (firstRow + row) + " of file " + file;
        String which = position;
        if (key != null) {
            FieldVector k = root.getVector(key);
            which = "the row with " + key + "=" + (k.isNull(row) ? "null" : String.valueOf(keyValue(k, row, dictionaries)))
                    + " (" + position + ")";
        }
        return new IllegalArgumentException("column " + c.name() + " of " + which + " " + problem);
    }

    /** {@return the key's value in {@code row}: a dictionary-encoded column's (a string Arrow read so), not its index} */
    private static Object keyValue(FieldVector k, int row, DictionaryProvider dictionaries) {
        DictionaryEncoding encoding = k.getField().getDictionary();
        if (encoding == null || dictionaries == null || dictionaries.lookup(encoding.getId()) == null) {
            return k.getObject(row);
        }
        long index = ((org.apache.arrow.vector.BaseIntVector) k).getValueAsLong(row);
        return dictionaries.lookup(encoding.getId()).getVector().getObject((int) index);
    }

    private static Tensor view(FieldVector v, TensorColumn c, int rows) {
        if (!c.isArray() || v instanceof FixedSizeListVector) {
            return ArrowTensors.of(v, 0, rows, NullPolicy.ACCEPT); // checked above
        }
        long from = start(v, 0);
        try (Tensor values = ArrowTensors.of((FieldVector) child(v), from, (long) rows * c.length(), NullPolicy.ACCEPT)) {
            return values.reshape(rows, c.length()).share();
        }
    }

    private static long firstNull(ValueVector v, long from, long end) {
        for (long i = from; i < end; i++) {
            if (v.isNull((int) i)) {
                return i;
            }
        }
        return end;
    }

    private static ValueVector child(FieldVector v) {
        return v instanceof FixedSizeListVector f ? f.getDataVector()
                : v instanceof LargeListVector l ? l.getDataVector() : ((BaseRepeatedValueVector) v).getDataVector();
    }

    /** {@return the index of row {@code row}'s first value in the list vector's values} */
    private static long start(FieldVector v, int row) {
        if (v instanceof FixedSizeListVector f) {
            return (long) row * f.getListSize();
        }
        ArrowBuf offsets = v.getOffsetBuffer();
        return v instanceof LargeListVector ? offsets.getLong(8L * row) : offsets.getInt(4L * row);
    }

    private static long length(FieldVector v, int row) {
        return start(v, row + 1) - start(v, row);
    }

    /** {@return the row of rows {@code [0, rows)} whose values hold the value at {@code index}} */
    private static int rowOf(FieldVector v, long index, int rows) {
        int lo = 0;
        int hi = rows - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (start(v, mid) <= index) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return lo;
    }
}
