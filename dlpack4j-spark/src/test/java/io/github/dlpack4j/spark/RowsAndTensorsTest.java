package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

/** Rows to tensors and back, without a Spark job: Spark's own row classes, built here. */
class RowsAndTensorsTest {
    private static final StructType SCHEMA = new StructType(new StructField[] {
        new StructField("id", DataTypes.LongType, false, Metadata.empty()),
        new StructField("f", DataTypes.createArrayType(DataTypes.FloatType, true), true, Metadata.empty()),
        new StructField("d", DataTypes.DoubleType, true, Metadata.empty())});
    private static final List<TensorColumn> COLUMNS = List.of(TensorColumn.scalar("id", DataTypes.LongType),
            TensorColumn.array("f", DataTypes.FloatType, 3), TensorColumn.scalar("d", DataTypes.DoubleType));

    @Test
    void rows_become_row_major_tensors_of_batch_size_rows_with_the_dtypes_of_the_schema() {
        RowsToTensors packer = RowsToTensors.of(SCHEMA, COLUMNS, "id");
        List<RowBatch> batches = new ArrayList<>();
        packer.batches(unsafe(rows(10)), 4).forEachRemaining(batches::add);

        assertThat(batches).extracting(RowBatch::rows).containsExactly(4, 4, 2);
        RowBatch last = batches.get(2);
        assertThat(last.tensor("id").dtype()).isEqualTo(DataType.INT64);
        assertThat(last.tensor("f").dtype()).isEqualTo(DataType.FLOAT32);
        assertThat(last.tensor("d").dtype()).isEqualTo(DataType.FLOAT64);
        assertThat(last.tensor("f").shape()).containsExactly(2, 3);
        assertThat(last.tensor("f").strides()).containsExactly(3, 1);
        assertThat(last.tensor(0).toLongArray()).containsExactly(8, 9);
        assertThat(last.tensor(1).toFloatArray()).containsExactly(8f, 8.5f, -8f, 9f, 9.5f, -9f);
        assertThat(last.tensor(2).toDoubleArray()).containsExactly(0.8, 0.9);
        batches.forEach(RowBatch::close);
    }

    @Test
    void arrays_that_are_not_unsafe_arrays_pack_into_the_same_tensors() {
        RowsToTensors packer = RowsToTensors.of(SCHEMA, COLUMNS, "id");
        try (RowBatch fromUnsafe = packer.next(unsafe(rows(5)), 5);
             RowBatch fromGeneric = packer.next(rows(5).iterator(), 5)) {
            for (int c = 0; c < COLUMNS.size(); c++) {
                assertThat(fromGeneric.tensor(c).toDoubleArray()).containsExactly(fromUnsafe.tensor(c).toDoubleArray());
            }
        }
    }

    @Test
    void a_refused_row_is_named_by_its_key_and_its_position() {
        List<InternalRow> rows = rows(3);
        rows.set(2, new GenericInternalRow(new Object[] {12L, new GenericArrayData(new Object[] {1f, 2f}), 0.5}));
        RowsToTensors packer = RowsToTensors.of(SCHEMA, COLUMNS, "id");

        assertThatThrownBy(() -> packer.next(unsafe(rows), 8))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("column f of the row with id=12 (row 2) holds 2 values; every row needs 3, "
                        + "as the column is a fixed-length array of 3");
        assertThatThrownBy(() -> RowsToTensors.of(SCHEMA, List.of(TensorColumn.scalar("f", DataTypes.FloatType)), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("column f is array<float>; as a tensor column of float32 [rows] it must be float");
    }

    @Test
    void tensors_become_rows_read_from_their_memory_strided_ones_included() {
        TensorsToRows writer = TensorsToRows.of(List.of(TensorColumn.scalar("id", DataTypes.LongType),
                TensorColumn.array("y", DataTypes.FloatType, 2), TensorColumn.array("flags", DataTypes.BooleanType, 1)));
        try (Tensor ids = Tensor.of(new long[] {7, 8, 9});
             Tensor yT = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);   // y is its transpose, a strided view
             Tensor flags = Tensor.of(new boolean[] {true, false, true}, 3, 1)) {
            Iterator<InternalRow> rows = writer.rows(List.of(ids, yT.transpose(), flags));
            List<String> seen = new ArrayList<>();
            rows.forEachRemaining(r -> seen.add(r.getLong(0) + " " + r.getArray(1).getFloat(0) + " "
                    + r.getArray(1).getFloat(1) + " " + r.getArray(2).getBoolean(0)));

            assertThat(seen).containsExactly("7 1.0 4.0 true", "8 2.0 5.0 false", "9 3.0 6.0 true");
            assertThat(writer.schema().simpleString()).isEqualTo("struct<id:bigint,y:array<float>,flags:array<boolean>>");
        }
    }

    @Test
    void a_tensor_of_another_dtype_or_shape_than_its_column_is_refused_naming_the_column() {
        TensorsToRows writer = TensorsToRows.of(List.of(TensorColumn.array("y", DataTypes.FloatType, 2)));
        try (Tensor doubles = Tensor.of(new double[] {1, 2}, 1, 2);
             Tensor wide = Tensor.of(new float[] {1, 2, 3}, 1, 3)) {
            assertThatThrownBy(() -> writer.rows(List.of(doubles)))
                    .hasMessage("column y needs a CPU tensor of float32 [rows, 2], not float64 [1, 2] on cpu:0");
            assertThatThrownBy(() -> writer.rows(List.of(wide)))
                    .hasMessage("column y needs a CPU tensor of float32 [rows, 2], not float32 [1, 3] on cpu:0");
        }
    }

    @Test
    void a_batchs_memory_is_reused_only_once_every_consumer_let_go_of_it() {
        // 13 rows of one long: a block size no other test uses, so the pool holds only this test's blocks.
        List<TensorColumn> ids = List.of(TensorColumn.scalar("id", DataTypes.LongType));
        RowsToTensors packer = RowsToTensors.of(SCHEMA, ids, null);
        RowBatch first = packer.next(unsafe(rows(13)), 13);
        long firstAddress = first.tensor(0).dataPointer();
        MemorySegment export = Dlpack.exportVersioned(first.tensor(0)); // a consumer still holds it
        first.close();

        RowBatch second = packer.next(unsafe(rows(13)), 13);
        assertThat(second.tensor(0).dataPointer()).as("a block still exported").isNotEqualTo(firstAddress);
        ManagedTensor consumer = ManagedTensor.adoptVersioned(export);
        assertThat(consumer.tensor().toLongArray()).startsWith(0, 1, 2);
        consumer.close(); // the consumer lets go: the block goes back
        second.close();

        try (RowBatch third = packer.next(unsafe(rows(13)), 13)) {
            assertThat(third.tensor(0).dataPointer()).isEqualTo(firstAddress);
        }
    }

    /** Rows {@code id, f = [id, id + 0.5, -id], d = id / 10} as generic rows, their arrays generic too. */
    private static List<InternalRow> rows(int n) {
        List<InternalRow> rows = new ArrayList<>();
        for (int id = 0; id < n; id++) {
            rows.add(new GenericInternalRow(new Object[] {(long) id,
                new GenericArrayData(new Object[] {(float) id, id + 0.5f, (float) -id}), id / 10.0}));
        }
        return rows;
    }

    /** The rows as Spark's scans give them: unsafe rows, their arrays unsafe arrays, one reused row object. */
    private static Iterator<InternalRow> unsafe(List<InternalRow> rows) {
        UnsafeProjection toUnsafe = UnsafeProjection.create(SCHEMA);
        Iterator<InternalRow> it = rows.iterator();
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return it.hasNext();
            }

            @Override
            public InternalRow next() {
                return toUnsafe.apply(it.next());
            }
        };
    }
}
