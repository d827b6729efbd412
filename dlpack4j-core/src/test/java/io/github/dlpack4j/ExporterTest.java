package io.github.dlpack4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(NoLeaks.class)
class ExporterTest {
    @Test
    void aVersionedRequestSharesTheTensorsMemory() {
        try (Tensor x = Tensor.of(new float[] {1, 2, 3});
             ManagedTensor m = ManagedTensor.adoptVersioned(x.export(ExportRequest.VERSIONED))) {
            m.tensor().setDouble(9, 1);
            assertThat(x.getDouble(1)).isEqualTo(9);
            assertThat(m.flags()).isZero();
        }
    }

    @Test
    void aLegacyRequestGivesTheLegacyStruct() {
        try (Tensor x = Tensor.of(new long[] {4, 5});
             ManagedTensor m = ManagedTensor.adoptLegacy(x.export(ExportRequest.LEGACY))) {
            assertThat(m.tensor().toLongArray()).containsExactly(4, 5);
        }
    }

    @Test
    void aCopyRequestGivesAnIndependentCopyMarkedIsCopied() {
        try (Tensor x = Tensor.of(new double[] {1, 2, 3, 4}, 2, 2);
             ManagedTensor m = ManagedTensor.adoptVersioned(x.transpose().export(new ExportRequest(true, true, null, null)))) {
            assertThat(m.flags() & DlpackFlags.IS_COPIED).isNotZero();
            assertThat(m.tensor().toDoubleArray()).containsExactly(1, 3, 2, 4);
            m.tensor().setDouble(-1, 0, 0);
            assertThat(x.getDouble(0, 0)).isEqualTo(1);
        }
    }

    @Test
    void aReadOnlyTensorCarriesReadOnlyAndCannotGoOutLegacyUnlessCopied() {
        try (Tensor x = Tensor.of(new int[] {7})) {
            Tensor ro = x.readOnly();
            assertThat(ro.flags()).isEqualTo(DlpackFlags.READ_ONLY);
            try (ManagedTensor m = ManagedTensor.adoptVersioned(ro.export(ExportRequest.VERSIONED))) {
                assertThat(m.tensor().isReadOnly()).isTrue();
            }
            assertThatThrownBy(() -> ro.export(ExportRequest.LEGACY)).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("read-only");
            try (ManagedTensor m = ManagedTensor.adoptLegacy(ro.export(new ExportRequest(false, true, null, null)))) {
                assertThat(m.tensor().toIntArray()).containsExactly(7);
            }
        }
    }

    @Test
    void anotherDeviceOrAStreamIsRefusedBeforeAnythingIsExported() {
        try (Tensor x = Tensor.of(new int[] {1})) {
            int before = Dlpack.liveExports();
            assertThatThrownBy(() -> x.export(new ExportRequest(true, null, new Device(DeviceType.CUDA, 0), null)))
                    .isInstanceOf(DlpackException.class).hasMessageContaining("cuda:0");
            assertThatThrownBy(() -> x.export(new ExportRequest(true, null, null, 7L)))
                    .isInstanceOf(DlpackException.class).hasMessageContaining("stream");
            assertThat(Dlpack.liveExports()).isEqualTo(before);
            MemorySegment p = x.export(new ExportRequest(true, false, Device.CPU, null));
            ManagedTensor.adoptVersioned(p).close();
        }
    }

    @Test
    void aTensorOnADeviceTakesAConsumerStreamSinceJavaQueuesNoWorkThere() {
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment data = arena.allocate(16);
            MemorySegment p = ForeignProducer.tensor(arena, true, data, DataType.FLOAT32, new long[] {4}, new long[] {1});
            p.set(java.lang.foreign.ValueLayout.JAVA_INT, ForeignProducer.dl(true) + io.github.dlpack4j.abi.DLTensor.DEVICE,
                    DeviceType.CUDA.code());
            try (ManagedTensor m = ManagedTensor.adoptVersioned(p)) {
                Device cuda = new Device(DeviceType.CUDA, 0);
                MemorySegment e = m.tensor().export(new ExportRequest(true, false, cuda, 1L));
                try (ManagedTensor back = ManagedTensor.adoptVersioned(e)) {
                    assertThat(back.tensor().device()).isEqualTo(cuda);
                }
            }
            assertThat(ForeignProducer.deleterCalls(p)).isOne();
        }
    }

    @Test
    void aShareKeepsTheMemoryAfterTheOriginalIsClosed() {
        long before = Dlpack.nativeBytesInUse();
        Tensor x = Tensor.of(new double[] {1, 2});
        Tensor shared = x.share();
        x.close();
        assertThatThrownBy(() -> x.getDouble(0)).isInstanceOf(IllegalStateException.class);
        assertThat(shared.toDoubleArray()).containsExactly(1, 2);
        MemorySegment p = shared.export(ExportRequest.VERSIONED);
        shared.close();
        assertThatThrownBy(shared::toDoubleArray).isInstanceOf(IllegalStateException.class);
        assertThat(Dlpack.nativeBytesInUse()).isGreaterThan(before);
        ManagedTensor.adoptVersioned(p).close();
        assertThat(Dlpack.nativeBytesInUse()).isEqualTo(before);
    }

    @Test
    void aClosedTensorCannotBeShared() {
        Tensor x = Tensor.of(new double[] {1});
        x.close();
        assertThatThrownBy(x::share).isInstanceOf(IllegalStateException.class);
    }
}
