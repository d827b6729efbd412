package io.github.dlpack4j.arrow;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import java.lang.foreign.MemorySegment;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.memory.util.AssertionUtil;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Arrow's reference counts and dlpack4j's holds, closed in every order. */
@ExtendWith(ArrowNoLeaks.class)
class LifetimeTest {
    @Test
    void theVectorMayBeClosedFirstTheTensorKeepsItsBuffer(BufferAllocator allocator) {
        FixedSizeListVector v = Vectors.embeddings(allocator, 100, 4);
        long bytes = allocator.getAllocatedMemory();
        Tensor t = ArrowTensors.of(v);
        v.close();
        assertThat(allocator.getAllocatedMemory()).as("the values' buffer is still held").isPositive()
                .isLessThan(bytes);
        assertThat(t.getDouble(99, 3)).isEqualTo(399);
        t.close();
        assertThat(allocator.getAllocatedMemory()).isZero();
        assertThatThrownBy(() -> t.getDouble(0, 0)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void theTensorMayBeClosedFirstTheVectorIsUntouched(BufferAllocator allocator) {
        try (Float4Vector v = Vectors.floats(allocator, 1, 2, 3)) {
            ArrowTensors.of(v).close();
            assertThat(v.get(2)).isEqualTo(3);
            v.set(2, 4);
            assertThat(v.get(2)).isEqualTo(4);
        }
    }

    @Test
    void anExportOutlivesTheTensorAndTheVector(BufferAllocator allocator) {
        Float4Vector v = Vectors.floats(allocator, 1, 2, 3);
        Tensor t = ArrowTensors.of(v);
        MemorySegment export = Dlpack.exportVersioned(t);
        t.close();
        v.close();
        assertThat(allocator.getAllocatedMemory()).isPositive();
        try (ManagedTensor m = ManagedTensor.adoptVersioned(export)) {
            assertThat(m.tensor().toFloatArray()).containsExactly(1, 2, 3);
        }
        assertThat(allocator.getAllocatedMemory()).isZero();
    }

    @Test
    void aForgottenTensorGivesItsReferenceBackWhenCollected(BufferAllocator allocator) {
        try (Float4Vector v = Vectors.floats(allocator, 1, 2, 3)) {
            long bytes = allocator.getAllocatedMemory();
            ArrowTensors.of(v); // dropped without close
            v.close();
            for (int i = 0; i < 100 && allocator.getAllocatedMemory() != 0; i++) {
                ArrowNoLeaks.settle(allocator);
            }
            assertThat(allocator.getAllocatedMemory()).as("of %d bytes", bytes).isZero();
        }
    }

    @Test
    void aVectorOverATensorKeepsItsMemoryAfterTheTensorIsClosed(BufferAllocator allocator) {
        long before = Dlpack.nativeBytesInUse();
        Tensor t = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2);
        FieldVector v = ArrowTensors.toVector(t, allocator);
        t.close();
        assertThat(v.getObject(1)).isEqualTo(java.util.List.of(3f, 4f));
        assertThat(Dlpack.nativeBytesInUse()).isGreaterThan(before);
        v.close();
        assertThat(Dlpack.nativeBytesInUse()).isEqualTo(before);
    }

    @Test
    void aTensorOfAVectorOverATensorHoldsBothWays(BufferAllocator allocator) {
        long before = Dlpack.nativeBytesInUse();
        Tensor t = Tensor.of(new double[] {1, 2, 3});
        FieldVector v = ArrowTensors.toVector(t, allocator);
        Tensor again = ArrowTensors.of(v);
        t.close();
        v.close();
        assertThat(again.toDoubleArray()).containsExactly(1, 2, 3);
        again.close();
        assertThat(allocator.getAllocatedMemory()).isZero();
        assertThat(Dlpack.nativeBytesInUse()).isEqualTo(before);
    }

    @Test
    void closingTheAllocatorUnderALiveTensorIsArrowsLeakErrorAndTheMemoryStaysValid() {
        RootAllocator allocator = new RootAllocator();
        Float4Vector v = Vectors.floats(allocator, 1, 2, 3);
        Tensor t = ArrowTensors.of(v);
        v.close();
        assertThatThrownBy(allocator::close).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Memory was leaked");
        assertThat(t.toFloatArray()).containsExactly(1, 2, 3);
        if (AssertionUtil.isAssertionsEnabled()) {
            // Arrow refuses any operation on a closed allocator when Java assertions are on: the
            // reference then stays taken (the leak Arrow reported), and the tensor is closed.
            assertThatThrownBy(t::close).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("allocator is closed");
        } else {
            t.close();
        }
        assertThat(t.isClosed()).isTrue();
        assertThatThrownBy(t::toFloatArray).isInstanceOf(IllegalStateException.class);
    }
}
