package io.github.dlpack4j;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.abi.DLDataType;
import io.github.dlpack4j.abi.DLDevice;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLPackVersion;
import io.github.dlpack4j.abi.DLTensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Each field of a foreign struct broken in turn: a clear error naming it, and the deleter exactly once. */
@ExtendWith(NoLeaks.class)
class BadInputTest {
    private static final long DL = DLManagedTensorVersioned.DL_TENSOR;

    /** Breaks a well-formed versioned 2x3 float32 tensor, adopts it, and checks the outcome. */
    private static void refused(Consumer<MemorySegment> breakIt, String... messageParts) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(24);
            MemorySegment p = ForeignProducer.tensor(arena, true, data, DataType.FLOAT32, new long[] {2, 3}, new long[] {3, 1});
            breakIt.accept(p);
            var thrown = assertThatThrownBy(() -> ManagedTensor.adoptVersioned(p)).isInstanceOf(DlpackException.class);
            for (String part : messageParts) {
                thrown.hasMessageContaining(part);
            }
            assertThat(ForeignProducer.deleterCalls(p)).as("deleter calls").isOne();
        }
    }

    private static MemorySegment shape(MemorySegment p) {
        return p.get(ADDRESS, DL + DLTensor.SHAPE).reinterpret(8L * ForeignProducer.CAPACITY);
    }

    private static MemorySegment strides(MemorySegment p) {
        return p.get(ADDRESS, DL + DLTensor.STRIDES).reinterpret(8L * ForeignProducer.CAPACITY);
    }

    @Test
    void majorVersionTwoIsRefused() {
        refused(p -> p.set(JAVA_INT, DLManagedTensorVersioned.VERSION + DLPackVersion.MAJOR, 2), "version = 2.3");
    }

    @Test
    void aNewerMinorVersionIsAccepted() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = ForeignProducer.tensor(arena, true, arena.allocate(4), DataType.INT32, new long[] {1}, new long[] {1});
            p.set(JAVA_INT, DLManagedTensorVersioned.VERSION + DLPackVersion.MINOR, 9);
            try (ManagedTensor m = ManagedTensor.adoptVersioned(p)) {
                assertThat(m.version()).isEqualTo(new DlpackVersion(1, 9));
            }
        }
    }

    @Test
    void negativeOrHugeNdimIsRefused() {
        refused(p -> p.set(JAVA_INT, DL + DLTensor.NDIM, -1), "dl_tensor.ndim = -1");
        refused(p -> p.set(JAVA_INT, DL + DLTensor.NDIM, Integer.MAX_VALUE), "dl_tensor.ndim = 2147483647");
    }

    @Test
    void negativeExtentsAreRefused() {
        refused(p -> shape(p).setAtIndex(JAVA_LONG, 1, -3), "dl_tensor.shape[1] = -3");
    }

    @Test
    void aShapeWhoseProductOverflowsIsRefused() {
        refused(p -> {
            shape(p).setAtIndex(JAVA_LONG, 0, 1L << 32);
            shape(p).setAtIndex(JAVA_LONG, 1, 1L << 32);
        }, "dl_tensor.shape", "overflows 64 bits");
    }

    @Test
    void aNegativeExtentIsNamedEvenAfterAnOverflowingPrefix() {
        refused(p -> {
            p.set(JAVA_INT, DL + DLTensor.NDIM, 3);
            shape(p).setAtIndex(JAVA_LONG, 0, 1L << 62);
            shape(p).setAtIndex(JAVA_LONG, 1, 4);
            shape(p).setAtIndex(JAVA_LONG, 2, -1);
        }, "dl_tensor.shape[2] = -1", "must not be negative");
    }

    @Test
    void stridesThatReachOutsideTheAddressSpaceAreRefused() {
        refused(p -> strides(p).setAtIndex(JAVA_LONG, 0, Long.MAX_VALUE / 2), "dl_tensor.strides", "overflows");
        refused(p -> strides(p).setAtIndex(JAVA_LONG, 0, -(1L << 60)), "dl_tensor.strides", "outside the address space");
        refused(p -> p.set(JAVA_LONG, DL + DLTensor.BYTE_OFFSET, -1L), "byte_offset = 18446744073709551615");
        refused(p -> p.set(JAVA_LONG, DL + DLTensor.DATA, Long.MAX_VALUE - 4), "outside the address space");
    }

    @Test
    void nullDataWithElementsIsRefusedButAllowedForEmptyTensors() {
        refused(p -> p.set(JAVA_LONG, DL + DLTensor.DATA, 0L), "dl_tensor.data = NULL", "6 elements");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = ForeignProducer.tensor(arena, true, MemorySegment.NULL, DataType.FLOAT32, new long[] {0, 3},
                    new long[] {3, 1});
            try (ManagedTensor m = ManagedTensor.adoptVersioned(p)) {
                assertThat(m.tensor().numel()).isZero();
            }
            assertThat(ForeignProducer.deleterCalls(p)).isOne();
        }
    }

    @Test
    void nullShapeWithDimensionsIsRefused() {
        refused(p -> p.set(ADDRESS, DL + DLTensor.SHAPE, MemorySegment.NULL), "dl_tensor.shape = NULL");
    }

    @Test
    void nullStridesMeanCompactRowMajorAsOlderProducersSendThem() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(24);
            MemorySegment p = ForeignProducer.tensor(arena, true, data, DataType.FLOAT32, new long[] {2, 3}, new long[] {9, 9});
            p.set(ADDRESS, DL + DLTensor.STRIDES, MemorySegment.NULL);
            try (ManagedTensor m = ManagedTensor.adoptVersioned(p)) {
                assertThat(m.tensor().strides()).containsExactly(3, 1);
            }
        }
    }

    @Test
    void unknownDtypeAndDeviceCodesAreRefused() {
        refused(p -> p.set(JAVA_BYTE, DL + DLTensor.DTYPE + DLDataType.CODE, (byte) 42), "dtype.code = 42");
        refused(p -> p.set(JAVA_INT, DL + DLTensor.DEVICE + DLDevice.DEVICE_TYPE, 5), "device.device_type = 5");
        refused(p -> p.set(JAVA_INT, DL + DLTensor.DEVICE + DLDevice.DEVICE_ID, -2), "device_id = -2");
    }

    @Test
    void fp6WithOtherThanSixBitsAndZeroLanesAreRefused() {
        refused(p -> {
            p.set(JAVA_BYTE, DL + DLTensor.DTYPE + DLDataType.CODE, (byte) 15);
            p.set(JAVA_BYTE, DL + DLTensor.DTYPE + DLDataType.BITS, (byte) 8);
        }, "dtype.bits = 8", "FLOAT6_E2M3FN");
        refused(p -> p.set(JAVA_SHORT, DL + DLTensor.DTYPE + DLDataType.LANES, (short) 0), "dtype.lanes = 0");
    }

    @Test
    void undefinedFlagBitsAreRefused() {
        refused(p -> p.set(JAVA_LONG, DLManagedTensorVersioned.FLAGS, 8L), "flags = 0x8");
    }

    @Test
    void packedSubByteDataMustBeCompact() {
        refused(p -> {
            p.set(JAVA_BYTE, DL + DLTensor.DTYPE + DLDataType.CODE, (byte) 17);
            p.set(JAVA_BYTE, DL + DLTensor.DTYPE + DLDataType.BITS, (byte) 4);
            strides(p).setAtIndex(JAVA_LONG, 0, 6);
        }, "dl_tensor.strides", "compact");
    }

    @Test
    void aNullDeleterIsAllowedAndNothingIsCalled() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = ForeignProducer.tensor(arena, true, arena.allocate(4), DataType.INT32, new long[] {1}, new long[] {1});
            p.set(ADDRESS, DLManagedTensorVersioned.DELETER, MemorySegment.NULL);
            ManagedTensor.adoptVersioned(p).close();
            p.set(JAVA_INT, DL + DLTensor.NDIM, -5);
            assertThatThrownBy(() -> ManagedTensor.adoptVersioned(p)).isInstanceOf(DlpackException.class);
            assertThat(ForeignProducer.deleterCalls(p)).isZero();
        }
    }

    @Test
    void aNullPointerIsRefusedWithoutTouchingMemory() {
        assertThatThrownBy(() -> ManagedTensor.adoptVersioned(MemorySegment.NULL)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void paddedSubByteDataIsReadOneElementPerByte() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocateFrom(JAVA_BYTE, (byte) 0x2, (byte) 0xF, (byte) 0x1);
            MemorySegment p = ForeignProducer.tensor(arena, true, data, DataType.FLOAT4_E2M1FN, new long[] {3}, new long[] {1});
            p.set(JAVA_LONG, DLManagedTensorVersioned.FLAGS, DlpackFlags.IS_SUBBYTE_TYPE_PADDED);
            try (ManagedTensor m = ManagedTensor.adoptVersioned(p)) {
                assertThat(m.tensor().isSubBytePadded()).isTrue();
                assertThat(m.tensor().toDoubleArray()).containsExactly(1.0, -6.0, 0.5);
                try (Tensor packed = m.tensor().copy()) {
                    assertThat(packed.isSubBytePadded()).isFalse();
                    assertThat(packed.toDoubleArray()).containsExactly(1.0, -6.0, 0.5);
                }
                assertThatThrownBy(() -> Dlpack.exportLegacy(m.tensor())).isInstanceOf(DlpackException.class);
            }
        }
    }

    @Test
    void hostMemoryBeyondUserSpaceIsRefused() {
        refused(p -> strides(p).setAtIndex(JAVA_LONG, 0, 1L << 58), "dl_tensor.strides", "outside the address space");
    }

    @Test
    void shapeAndStridePointersThatCannotBeArraysAreRefused() {
        refused(p -> p.set(JAVA_LONG, DL + DLTensor.SHAPE, -16L), "dl_tensor.shape = 0xfffffffffffffff0", "user-space");
        refused(p -> p.set(JAVA_LONG, DL + DLTensor.STRIDES, p.get(JAVA_LONG, DL + DLTensor.STRIDES) + 3),
                "dl_tensor.strides", "8-byte aligned");
    }

    @Test
    void aManagedTensorPointerOutsideUserSpaceIsRefusedWithoutReadingIt() {
        assertThatThrownBy(() -> ManagedTensor.adoptVersioned(MemorySegment.ofAddress(-64)))
                .isInstanceOf(DlpackException.class).hasMessageContaining("managed tensor pointer");
    }

    @Test
    void readOnlyTensorsDoNotGoOutThroughTheLegacyAbi() {
        try (Tensor x = Tensor.of(new int[] {1})) {
            assertThatThrownBy(() -> Dlpack.exportLegacy(x.readOnly())).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("READ_ONLY");
        }
    }

    @Test
    void emptyTensorsAreExportedWithNullData() {
        try (Tensor x = Tensor.zeros(DataType.FLOAT32, 0)) {
            MemorySegment p = Dlpack.exportVersioned(x);
            assertThat(p.reinterpret(DLManagedTensorVersioned.SIZE).get(JAVA_LONG, DL + DLTensor.DATA)).isZero();
            ManagedTensor.adoptVersioned(p).close();
        }
    }
}
