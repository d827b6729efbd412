package io.github.dlpack4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Java to Java through both ABIs: the same memory, both ways, and the deleter exactly once. */
@ExtendWith(NoLeaks.class)
class RoundTripTest {
    static Stream<Arguments> everyDtypeThroughBothAbis() {
        List<DataType> dtypes = TensorTest.numericDtypes();
        return Stream.of(true, false).flatMap(v -> dtypes.stream().map(t -> Arguments.of(t, v)));
    }

    private static ManagedTensor adopt(MemorySegment p, boolean versioned) {
        return versioned ? ManagedTensor.adoptVersioned(p) : ManagedTensor.adoptLegacy(p);
    }

    private static MemorySegment export(Tensor t, boolean versioned) {
        return versioned ? Dlpack.exportVersioned(t) : Dlpack.exportLegacy(t);
    }

    @ParameterizedTest(name = "{0} versioned={1}")
    @MethodSource("everyDtypeThroughBothAbis")
    void aRoundTripSharesMemoryAndDeletesOnce(DataType dtype, boolean versioned) {
        try (Tensor original = Tensor.zeros(dtype, 2, 3)) {
            for (int i = 0; i < 6; i++) {
                original.setDouble(TensorTest.exampleValue(dtype, i), i / 3, i % 3);
            }
            int exportsBefore = Dlpack.liveExports();
            MemorySegment p = export(original, versioned);
            assertThat(Dlpack.liveExports()).isEqualTo(exportsBefore + 1);
            try (ManagedTensor m = adopt(p, versioned)) {
                Tensor back = m.tensor();
                assertThat(m.isVersioned()).isEqualTo(versioned);
                assertThat(back.dtype()).isEqualTo(dtype);
                assertThat(back.shape()).containsExactly(2, 3);
                assertThat(back.dataPointer()).isEqualTo(original.dataPointer());
                assertThat(back.toDoubleArray()).isEqualTo(original.toDoubleArray());
                back.setDouble(TensorTest.exampleValue(dtype, 1), 0, 0);
                assertThat(original.getDouble(0, 0)).isEqualTo(TensorTest.exampleValue(dtype, 1));
            }
            assertThat(Dlpack.liveExports()).as("the deleter ran on close").isEqualTo(exportsBefore);
        }
    }

    @Test
    void stridedViewsTravelWithTheirStridesAndOffset() {
        try (Tensor x = Tensor.of(new long[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 3, 4)) {
            Tensor view = x.slice(1, 3, Long.MIN_VALUE, -2).transpose(); // shape [2, 3], strides [-2, 4]
            try (ManagedTensor m = ManagedTensor.adoptVersioned(Dlpack.exportVersioned(view))) {
                assertThat(m.tensor().strides()).containsExactly(-2, 4);
                assertThat(m.tensor().toLongArray()).containsExactly(3, 7, 11, 1, 5, 9);
                assertThat(m.tensor().data().byteSize()).isEqualTo(8 * 11);
            }
        }
    }

    @Test
    void readOnlyTensorsArriveReadOnlyThroughTheVersionedAbi() {
        try (Tensor x = Tensor.of(new int[] {1, 2})) {
            try (ManagedTensor m = ManagedTensor.adoptVersioned(Dlpack.exportVersioned(x.readOnly()))) {
                assertThat(m.flags()).isEqualTo(DlpackFlags.READ_ONLY);
                assertThat(m.tensor().isReadOnly()).isTrue();
                assertThatThrownBy(() -> m.tensor().setLong(0, 0)).isInstanceOf(UnsupportedOperationException.class);
            }
            try (ManagedTensor m = ManagedTensor.adoptVersioned(Dlpack.exportVersioned(x, DlpackFlags.IS_COPIED))) {
                assertThat(m.flags()).isEqualTo(DlpackFlags.IS_COPIED);
                assertThat(m.tensor().isReadOnly()).isFalse();
                assertThat(m.version()).isEqualTo(DlpackVersion.CURRENT);
            }
        }
    }

    @Test
    void zeroDimensionalAndEmptyTensorsRoundTrip() {
        try (Tensor s = Tensor.zeros(DataType.FLOAT64); Tensor e = Tensor.zeros(DataType.FLOAT32, 0, 4)) {
            s.setDouble(2.5);
            try (ManagedTensor ms = ManagedTensor.adoptLegacy(Dlpack.exportLegacy(s));
                 ManagedTensor me = ManagedTensor.adoptVersioned(Dlpack.exportVersioned(e))) {
                assertThat(ms.tensor().ndim()).isZero();
                assertThat(ms.tensor().getDouble()).isEqualTo(2.5);
                assertThat(me.tensor().shape()).containsExactly(0, 4);
                assertThat(me.tensor().toFloatArray()).isEmpty();
            }
        }
    }

    @Test
    void aClosedTensorCannotBeExported() {
        Tensor x = Tensor.zeros(DataType.INT8, 1);
        x.close();
        assertThatThrownBy(() -> Dlpack.exportVersioned(x)).isInstanceOf(IllegalStateException.class);
    }
}
