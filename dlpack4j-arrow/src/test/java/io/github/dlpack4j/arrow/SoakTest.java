package io.github.dlpack4j.arrow;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.Tensor;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Many rounds leave nothing behind: Arrow's allocator is empty after, dlpack4j's bytes are back. */
@ExtendWith(ArrowNoLeaks.class)
class SoakTest {
    @Test
    void aHundredThousandTensorsOfVectorsLeaveTheAllocatorEmpty(BufferAllocator allocator) {
        double sum = 0;
        for (int round = 0; round < 100_000; round++) {
            try (FixedSizeListVector v = Vectors.embeddings(allocator, 2, 4); Tensor t = ArrowTensors.of(v, round % 2, 1)) {
                sum += t.getDouble(0, 3);
            }
        }
        assertThat(sum).isEqualTo(50_000 * 3 + 50_000 * 7);
        assertThat(allocator.getAllocatedMemory()).isZero();
    }

    @Test
    void tenThousandVectorsOfTensorsLeaveTheAllocatorEmpty(BufferAllocator allocator) {
        for (int round = 0; round < 10_000; round++) {
            try (Tensor t = Tensor.of(new float[] {round, 1}, 1, 2); FieldVector v = ArrowTensors.toVector(t, allocator)) {
                assertThat(((FixedSizeListVector) v).getObject(0).get(0)).isEqualTo((float) round);
            }
        }
        assertThat(allocator.getAllocatedMemory()).isZero();
    }
}
