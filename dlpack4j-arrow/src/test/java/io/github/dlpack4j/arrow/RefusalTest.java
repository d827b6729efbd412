package io.github.dlpack4j.arrow;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import java.nio.charset.StandardCharsets;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** What cannot become a tensor, or a vector, is refused with a message that says what to do. */
@ExtendWith(ArrowNoLeaks.class)
class RefusalTest {
    @Test
    void nullsInTheRowsAskedForAreRefusedWithTheirCountAndTheFirstRow(BufferAllocator allocator) {
        try (Float4Vector v = Vectors.floats(allocator, new float[100])) {
            v.setNull(17);
            v.setNull(40);
            v.setNull(99);
            assertThatThrownBy(() -> ArrowTensors.of(v)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'floats' has 3 nulls in rows [0, 100), the first in row 17")
                    .hasMessageContaining("NullPolicy.ACCEPT");
            assertThatThrownBy(() -> ArrowTensors.of(v, 30, 20)).hasMessageContaining("1 null in rows [30, 50), the first in row 40");
            try (Tensor clean = ArrowTensors.of(v, 18, 22)) {
                assertThat(clean.shape()).containsExactly(22);
            }
        }
    }

    @Test
    void acceptingNullsGivesTheValuesStoredUnderThem(BufferAllocator allocator) {
        try (Float4Vector v = Vectors.floats(allocator, 1, 2, 3)) {
            v.setNull(1); // Arrow leaves the value slot as it was
            try (Tensor t = ArrowTensors.of(v, 0, 3, NullPolicy.ACCEPT)) {
                assertThat(t.toFloatArray()).containsExactly(1, 2, 3);
            }
        }
    }

    @Test
    void aFieldDeclaredNotNullableIsTakenAtItsWordWithoutReadingItsBitmap(BufferAllocator allocator) {
        try (Float4Vector v = new Float4Vector(new org.apache.arrow.vector.types.pojo.Field("dense",
                org.apache.arrow.vector.types.pojo.FieldType.notNullable(Vectors.FLOAT32), null), allocator)) {
            v.allocateNew(2);
            v.set(0, 5);
            v.setValueCount(2); // value 1 was never set: its validity bit is 0, against the schema
            try (Tensor t = ArrowTensors.of(v)) {
                assertThat(t.toFloatArray()).containsExactly(5, 0);
            }
        }
    }

    @Test
    void aNullInsideAListRowIsRefusedWithItsRow(BufferAllocator allocator) {
        try (FixedSizeListVector v = Vectors.embeddings(allocator, 10, 8)) {
            ((Float4Vector) v.getDataVector()).setNull(8 * 6 + 3);
            assertThatThrownBy(() -> ArrowTensors.of(v)).hasMessageContaining("1 null in rows [0, 10), the first in row 6");
            v.setNull(2);
            assertThatThrownBy(() -> ArrowTensors.of(v)).hasMessageContaining("2 nulls in rows [0, 10), the first in row 2");
            try (Tensor before = ArrowTensors.of(v, 0, 2)) {
                assertThat(before.shape()).containsExactly(2, 8);
            }
        }
    }

    @Test
    void aNullFoundInTheMiddleOfALongVectorIsCountedExactly(BufferAllocator allocator) {
        try (Float4Vector v = Vectors.floats(allocator, new float[10_000])) {
            for (int i = 1000; i < 1200; i += 3) {
                v.setNull(i);
            }
            assertThatThrownBy(() -> ArrowTensors.of(v, 1, 9_998)).hasMessageContaining("67 nulls in rows [1, 9999), the first in row 1000");
        }
    }

    @Test
    void aBitVectorIsRefusedWithWhatToUseInstead(BufferAllocator allocator) {
        try (BitVector v = new BitVector("flags", allocator)) {
            v.allocateNew(2);
            v.setValueCount(2);
            assertThatThrownBy(() -> ArrowTensors.of(v)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("BitVector 'flags' cannot be a tensor")
                    .hasMessageContaining("copy the values into a UInt1Vector");
        }
    }

    @Test
    void variableWidthVectorsAreRefused(BufferAllocator allocator) {
        try (VarCharVector v = new VarCharVector("names", allocator); ListVector l = ListVector.empty("lists", allocator)) {
            v.allocateNew();
            v.setSafe(0, "a".getBytes(StandardCharsets.UTF_8));
            v.setValueCount(1);
            assertThatThrownBy(() -> ArrowTensors.of(v)).hasMessageContaining("VarCharVector 'names' cannot be a tensor")
                    .hasMessageContaining("no fixed size");
            assertThatThrownBy(() -> ArrowTensors.of(l)).hasMessageContaining("FixedSizeListVector");
        }
    }

    @Test
    void fixedWidthTypesWithoutADtypeAreRefused(BufferAllocator allocator) {
        try (DateDayVector v = new DateDayVector("days", allocator)) {
            assertThatThrownBy(() -> ArrowTensors.of(v)).hasMessageContaining("Arrow type Date(DAY) has no DLPack dtype");
        }
    }

    @Test
    void aTensorThatIsNotCompactIsRefusedWithTheFix(BufferAllocator allocator) {
        try (Tensor t = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
            for (Tensor view : new Tensor[] {t.transpose(), t.slice(1, 0, 3, 2), t.flip(0), t.broadcastTo(2, 2, 3)}) {
                assertThatThrownBy(() -> ArrowTensors.toVector(view, allocator)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("is not compact").hasMessageContaining("pass copy()");
            }
            try (Tensor c = t.transpose().copy(); var v = ArrowTensors.toVector(c, allocator)) {
                assertThat(v.getValueCount()).isEqualTo(3);
            }
        }
    }

    @Test
    void tensorsNoVectorCanHoldAreRefused(BufferAllocator allocator) {
        try (Tensor bools = Tensor.of(new boolean[] {true}); Tensor complex = Tensor.zeros(DataType.COMPLEX64, 2);
             Tensor scalar = Tensor.zeros(DataType.FLOAT32); Tensor ro = Tensor.of(new float[] {1}).readOnly().share()) {
            assertThatThrownBy(() -> ArrowTensors.toVector(bools, allocator)).hasMessageContaining("Arrow's booleans are bits");
            assertThatThrownBy(() -> ArrowTensors.toVector(complex, allocator)).hasMessageContaining("no Arrow vector holds complex64");
            assertThatThrownBy(() -> ArrowTensors.toVector(scalar, allocator)).hasMessageContaining("reshape(1)");
            assertThatThrownBy(() -> ArrowTensors.toVector(ro, allocator)).hasMessageContaining("read-only");
        }
    }
}
