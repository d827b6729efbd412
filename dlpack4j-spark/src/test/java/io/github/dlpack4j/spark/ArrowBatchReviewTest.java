package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import io.github.dlpack4j.Tensor;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVectorHelper;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.LargeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The batch checks ({@link ArrowBatch}) against the row route's rule applied row by row, column by
 * column: random batches of list, large-list and fixed-size-list columns (their values starting
 * past junk, so the first offset is not 0), scalar columns, nulls and wrong lengths at random places
 * around bit, byte and chunk boundaries, and nulls in the values that no row reaches.
 */
class ArrowBatchReviewTest {
    private final BufferAllocator allocator = new RootAllocator();

    @AfterEach
    void everyBufferIsReleased() {
        assertThat(allocator.getAllocatedMemory()).isZero();
        allocator.close();
    }

    private enum Kind { LIST, LARGE_LIST, FIXED, F64, I64 }

    /** One column's vector: {@code length} values a row, a fault or two. */
    private FieldVector column(Random rnd, Kind kind, String name, int rows, int length) {
        int faults = rnd.nextInt(4) == 0 ? 0 : 1 + rnd.nextInt(2);
        switch (kind) {
            case F64, I64 -> {
                var v = kind == Kind.F64 ? new Float8Vector(name, allocator) : new BigIntVector(name, allocator);
                v.allocateNew(rows);
                for (int r = 0; r < rows; r++) {
                    if (v instanceof Float8Vector f) {
                        f.set(r, r * 0.5);
                    } else {
                        ((BigIntVector) v).set(r, 1000 + r);
                    }
                }
                v.setValueCount(rows);
                for (int k = 0; k < faults; k++) {
                    v.setNull(place(rnd, rows));
                }
                return v;
            }
            case FIXED -> {
                int size = rnd.nextInt(20) == 0 ? length + 1 : length;
                FixedSizeListVector f = FixedSizeListVector.empty(name, size, allocator);
                f.addOrGetVector(FieldType.nullable(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)));
                Float4Vector values = (Float4Vector) f.getDataVector();
                values.allocateNew(rows * size);
                f.allocateNew();
                for (int r = 0; r < rows; r++) {
                    f.setNotNull(r);
                    for (int k = 0; k < size; k++) {
                        values.set(r * size + k, r + k / 100f);
                    }
                }
                values.setValueCount(rows * size);
                f.setValueCount(rows);
                for (int k = 0; k < faults; k++) {
                    if (rnd.nextBoolean()) {
                        f.setNull(place(rnd, rows));
                    } else {
                        values.setNull(place(rnd, rows * size));
                    }
                }
                return f;
            }
            default -> {
                int base = rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(70);
                int tail = rnd.nextInt(20);
                int[] lengths = new int[rows];
                java.util.Arrays.fill(lengths, length);
                int wrong = -1;
                if (faults > 0 && rnd.nextInt(3) == 0) {
                    wrong = place(rnd, rows);
                    lengths[wrong] = rnd.nextBoolean() ? length + 1 : Math.max(0, length - 1 - rnd.nextInt(2));
                    faults--;
                }
                int total = base + tail;
                for (int n : lengths) {
                    total += n;
                }
                FieldVector v = kind == Kind.LIST ? ListVector.empty(name, allocator) : LargeListVector.empty(name, allocator);
                Float4Vector values;
                if (v instanceof ListVector l) {
                    l.addOrGetVector(FieldType.nullable(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)));
                    values = (Float4Vector) l.getDataVector();
                    l.allocateNew();
                } else {
                    LargeListVector l = (LargeListVector) v;
                    l.addOrGetVector(FieldType.nullable(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)));
                    values = (Float4Vector) l.getDataVector();
                    l.allocateNew();
                }
                values.allocateNew(Math.max(1, total));
                for (int i = 0; i < total; i++) {
                    values.set(i, -i);
                }
                // junk before the first row's values and after the last's, some of it null: no row holds it
                for (int i = 0; i < base; i += 1 + rnd.nextInt(5)) {
                    values.setNull(i);
                }
                for (int i = total - tail; i < total; i += 1 + rnd.nextInt(5)) {
                    values.setNull(i);
                }
                values.setValueCount(total);
                if (v instanceof ListVector l) {
                    l.getOffsetBuffer().setInt(0, base);
                    for (int r = 0; r < rows; r++) {
                        l.startNewValue(r);
                        l.endValue(r, lengths[r]);
                    }
                    l.setValueCount(rows);
                } else {
                    LargeListVector l = (LargeListVector) v;
                    l.getOffsetBuffer().setLong(0, base);
                    for (int r = 0; r < rows; r++) {
                        l.startNewValue(r);
                        l.endValue(r, lengths[r]);
                    }
                    l.setValueCount(rows);
                }
                values.setValueCount(total);
                for (int k = 0; k < faults; k++) {
                    if (rnd.nextBoolean()) {
                        setNull(v, place(rnd, rows));
                    } else {
                        int at = base + place(rnd, total - base - tail);
                        if (total - base - tail > 0) {
                            values.setNull(at);
                        }
                    }
                }
                return v;
            }
        }
    }

    /** Clears the row's validity bit only: its offsets stay, so a null row may hold values, as Arrow allows. */
    private static void setNull(FieldVector v, int row) {
        BitVectorHelper.unsetBit(v.getValidityBuffer(), row);
    }

    /** {@return a place in {@code [0, n)}, often at a bit, byte or 4096-byte boundary} */
    private static int place(Random rnd, int n) {
        if (n <= 1) {
            return 0;
        }
        int[] near = {0, 7, 8, 9, 15, 16, 63, 64, 8 * 4096 - 1, 8 * 4096, 8 * 4096 + 1, n - 1, n - 2, n - 8, n - 9};
        int p = rnd.nextInt(3) == 0 ? rnd.nextInt(n) : near[rnd.nextInt(near.length)] + rnd.nextInt(3) - 1;
        return Math.floorMod(p, n);
    }

    private static ValueVector child(FieldVector v) {
        return v instanceof FixedSizeListVector f ? f.getDataVector()
                : v instanceof LargeListVector l ? l.getDataVector() : ((ListVector) v).getDataVector();
    }

    private static long start(FieldVector v, int row) {
        if (v instanceof FixedSizeListVector f) {
            return (long) row * f.getListSize();
        }
        return v instanceof LargeListVector l ? l.getOffsetBuffer().getLong(8L * row) : v.getOffsetBuffer().getInt(4L * row);
    }

    /** The row route's rule: row by row, column by column, the first refusal's words. */
    private static String expected(VectorSchemaRoot root, List<TensorColumn> columns, String key, long firstRow) {
        for (int r = 0; r < root.getRowCount(); r++) {
            for (TensorColumn c : columns) {
                FieldVector v = root.getVector(c.name());
                String problem = null;
                if (v.isNull(r)) {
                    problem = "is null; a tensor column cannot hold nulls (filter or fill them first)";
                } else if (c.isArray()) {
                    long s = start(v, r);
                    long n = start(v, r + 1) - s;
                    if (n != c.length()) {
                        problem = "holds " + n + " values; every row needs " + c.length()
                                + ", as the column is a fixed-length array of " + c.length();
                    } else {
                        for (long i = s; i < s + n && problem == null; i++) {
                            if (child(v).isNull((int) i)) {
                                problem = "holds a null at index " + (i - s) + "; a tensor column cannot hold nulls";
                            }
                        }
                    }
                }
                if (problem != null) {
                    FieldVector k = root.getVector(key);
                    return "column " + c.name() + " of the row with " + key + "=" + (k.isNull(r) ? "null" : k.getObject(r))
                            + " (row " + (firstRow + r) + " of file f.parquet) " + problem;
                }
            }
        }
        return null;
    }

    @Test
    void random_batches_are_refused_at_the_row_and_column_and_with_the_words_the_row_route_gives() {
        Random rnd = new Random(40);
        int[] sizes = {1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100, 257};
        int refused = 0;
        for (int iteration = 0; iteration < 3000; iteration++) {
            int rows = iteration % 50 == 49 ? 300 + rnd.nextInt(200) : sizes[rnd.nextInt(sizes.length)];
            int length = iteration % 50 == 49 ? 128 : 1 + rnd.nextInt(5);
            int count = 1 + rnd.nextInt(3);
            List<FieldVector> vectors = new ArrayList<>();
            List<TensorColumn> columns = new ArrayList<>();
            BigIntVector id = new BigIntVector("id", allocator);
            id.allocateNew(rows);
            for (int r = 0; r < rows; r++) {
                id.set(r, 7000 + r);
            }
            id.setValueCount(rows);
            if (rnd.nextInt(4) == 0) {
                id.setNull(place(rnd, rows));
            }
            vectors.add(id);
            if (rnd.nextBoolean()) {
                columns.add(TensorColumn.scalar("id", DataTypes.LongType));
            }
            for (int c = 0; c < count; c++) {
                Kind kind = Kind.values()[rnd.nextInt(Kind.values().length)];
                String name = "c" + c;
                vectors.add(column(rnd, kind, name, rows, length));
                columns.add(switch (kind) {
                    case F64 -> TensorColumn.scalar(name, DataTypes.DoubleType);
                    case I64 -> TensorColumn.scalar(name, DataTypes.LongType);
                    default -> TensorColumn.array(name, DataTypes.FloatType, length);
                });
            }
            java.util.Collections.shuffle(columns, rnd);
            try (VectorSchemaRoot root = new VectorSchemaRoot(vectors)) {
                String want = expected(root, columns, "id", 500);
                ArrowBatch.Checked checked = ArrowBatch.check(root, null, columns, "id", "f.parquet", 500);
                if (want == null) {
                    assertThat(checked).as("iteration %d", iteration).isEqualTo(new ArrowBatch.Checked(rows, null));
                    ArrowBatch.tensors(root, columns, rows).forEach(Tensor::close);
                } else {
                    refused++;
                    assertThat(checked.refusal()).as("iteration %d", iteration).isNotNull();
                    assertThat(checked.refusal().getMessage()).as("iteration %d", iteration).isEqualTo(want);
                    assertThat(checked.refusal().getMessage()).as("iteration %d", iteration)
                            .contains("(row " + (500 + checked.rows()) + " of file");
                }
            }
        }
        assertThat(refused).as("refused batches among 3000").isBetween(1000, 2900);
    }
}
