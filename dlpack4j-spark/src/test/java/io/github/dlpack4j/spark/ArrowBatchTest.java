package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import io.github.dlpack4j.Tensor;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The checks of a read batch's columns ({@link ArrowBatch}) on batches large enough that their
 * validity bitmaps span many of the compared chunks: the first refused row is found wherever its
 * null or its length sits, at bit, byte and chunk boundaries alike, and a clean batch is viewed.
 */
class ArrowBatchTest {
    private static final int ROWS = 20_000;
    private static final int N = 256;
    private static final List<TensorColumn> COLUMNS = List.of(TensorColumn.array("features", DataTypes.FloatType, N),
            TensorColumn.scalar("id", DataTypes.LongType));

    private final BufferAllocator allocator = new RootAllocator();

    @AfterEach
    void everyBufferIsReleased() {
        assertThat(allocator.getAllocatedMemory()).isZero();
        allocator.close();
    }

    /** A batch of {@link #ROWS} rows of {@link #N} values each, {@code id} = the row; {@code edit} changes it before it is sealed. */
    private VectorSchemaRoot batch(Edit edit) {
        ListVector features = ListVector.empty("features", allocator);
        features.addOrGetVector(FieldType.nullable(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)));
        BigIntVector id = new BigIntVector("id", allocator);
        Float4Vector values = (Float4Vector) features.getDataVector();
        values.allocateNew(ROWS * N);
        features.allocateNew();
        id.allocateNew(ROWS);
        int at = 0;
        for (int r = 0; r < ROWS; r++) {
            int n = edit.length(r);
            features.startNewValue(r);
            for (int k = 0; k < n; k++) {
                values.setSafe(at + k, r + k / 1000f);
            }
            at += n;
            features.endValue(r, n);
            id.set(r, r);
        }
        values.setValueCount(at);
        features.setValueCount(ROWS);
        id.setValueCount(ROWS);
        edit.apply(features, values, id);
        return new VectorSchemaRoot(List.<FieldVector>of(features, id));
    }

    private interface Edit {
        default int length(int row) {
            return N;
        }

        default void apply(ListVector features, Float4Vector values, BigIntVector id) {
        }
    }

    private String refusal(Edit edit) {
        try (VectorSchemaRoot root = batch(edit)) {
            ArrowBatch.Checked checked = ArrowBatch.check(root, null, COLUMNS, "id", "f.parquet", 100);
            assertThat(checked.refusal()).as("a refusal").isNotNull();
            assertThat(checked.refusal().getMessage()).as("the refused row is the first not clean")
                    .contains("(row " + (100 + checked.rows()) + " of file");
            return checked.refusal().getMessage();
        }
    }

    @Test
    void a_clean_batch_becomes_its_tensors_without_a_copy() {
        try (VectorSchemaRoot root = batch(new Edit() { })) {
            assertThat(ArrowBatch.check(root, null, COLUMNS, "id", "f.parquet", 0))
                    .isEqualTo(new ArrowBatch.Checked(ROWS, null));
            List<Tensor> tensors = ArrowBatch.tensors(root, COLUMNS, ROWS);
            try {
                assertThat(tensors.get(0).shape()).containsExactly(ROWS, N);
                assertThat(tensors.get(0).dataPointer())
                        .isEqualTo(((ListVector) root.getVector("features")).getDataVector().getDataBufferAddress());
                assertThat(tensors.get(0).getFloat(ROWS - 1, N - 1)).isEqualTo(ROWS - 1 + (N - 1) / 1000f);
                assertThat(tensors.get(1).getLong(ROWS - 1)).isEqualTo(ROWS - 1);
            } finally {
                tensors.forEach(Tensor::close);
            }
        }
    }

    @Test
    void a_null_element_is_found_at_the_first_and_last_bit_of_a_byte_and_past_a_chunk_of_the_bitmap() {
        // element indexes: the very first; the last bit of a byte; the first past 4096 bitmap bytes; one in the last row
        long[] elements = {0, 8L * 1000 + 7, 8L * 4096 + 1, (long) ROWS * N - 3};
        for (long e : elements) {
            int row = (int) (e / N);
            assertThat(refusal(new Edit() {
                @Override
                public void apply(ListVector features, Float4Vector values, BigIntVector id) {
                    values.setNull((int) e);
                }
            })).as("element %d", e).isEqualTo("column features of the row with id=" + row + " (row " + (100 + row)
                    + " of file f.parquet) holds a null at index " + (e % N) + "; a tensor column cannot hold nulls");
        }
    }

    @Test
    void a_null_row_a_short_row_and_a_null_key_late_in_the_batch_are_named_first_come_first() {
        assertThat(refusal(new Edit() {
            @Override
            public int length(int row) {
                return row == 19_999 ? N - 1 : N;
            }
        })).isEqualTo("column features of the row with id=19999 (row 20099 of file f.parquet) holds 255 values; every row"
                + " needs 256, as the column is a fixed-length array of 256");
        assertThat(refusal(new Edit() {
            @Override
            public int length(int row) {
                return row == 12_345 ? N + 1 : N;
            }

            @Override
            public void apply(ListVector features, Float4Vector values, BigIntVector id) {
                values.setNull(15_000 * N); // a later refusal: the earlier row is the one named
            }
        })).startsWith("column features of the row with id=12345 (row 12445 of file f.parquet) holds 257 values");
        assertThat(refusal(new Edit() {
            @Override
            public void apply(ListVector features, Float4Vector values, BigIntVector id) {
                features.setNull(17_001);
                id.setNull(9_999);
            }
        })).as("the id column's null comes first").isEqualTo(
                "column id of the row with id=null (row 10099 of file f.parquet) is null; a tensor column cannot hold nulls"
                + " (filter or fill them first)");
        assertThat(refusal(new Edit() {
            @Override
            public void apply(ListVector features, Float4Vector values, BigIntVector id) {
                features.setNull(17_001);
            }
        })).isEqualTo("column features of the row with id=17001 (row 17101 of file f.parquet) is null; a tensor column"
                + " cannot hold nulls (filter or fill them first)");
    }
}
