package io.github.dlpack4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.abi.DLDataType;
import io.github.dlpack4j.abi.DLDevice;
import io.github.dlpack4j.abi.DLManagedTensor;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLPackExchangeAPI;
import io.github.dlpack4j.abi.DLPackExchangeAPIHeader;
import io.github.dlpack4j.abi.DLPackVersion;
import io.github.dlpack4j.abi.DLTensor;
import org.junit.jupiter.api.Test;

/** Every offset and size, pinned to what a C compiler gives for dlpack.h 1.3 on 64-bit Linux. */
class AbiLayoutTest {
    @Test
    void dlpackVersionIsTwoUint32s() {
        assertThat(new long[] {DLPackVersion.MAJOR, DLPackVersion.MINOR, DLPackVersion.SIZE}).containsExactly(0, 4, 8);
    }

    @Test
    void dlDeviceIsTwoInt32s() {
        assertThat(new long[] {DLDevice.DEVICE_TYPE, DLDevice.DEVICE_ID, DLDevice.SIZE}).containsExactly(0, 4, 8);
    }

    @Test
    void dlDataTypeIsCodeBitsLanesInFourBytes() {
        assertThat(new long[] {DLDataType.CODE, DLDataType.BITS, DLDataType.LANES, DLDataType.SIZE})
                .containsExactly(0, 1, 2, 4);
    }

    @Test
    void dlTensorHasItsSevenFieldsIn48Bytes() {
        assertThat(new long[] {DLTensor.DATA, DLTensor.DEVICE, DLTensor.NDIM, DLTensor.DTYPE, DLTensor.SHAPE,
                DLTensor.STRIDES, DLTensor.BYTE_OFFSET, DLTensor.SIZE}).containsExactly(0, 8, 16, 20, 24, 32, 40, 48);
    }

    @Test
    void legacyManagedTensorPutsContextAndDeleterAfterTheTensor() {
        assertThat(new long[] {DLManagedTensor.DL_TENSOR, DLManagedTensor.MANAGER_CTX, DLManagedTensor.DELETER,
                DLManagedTensor.SIZE}).containsExactly(0, 48, 56, 64);
    }

    @Test
    void versionedManagedTensorPutsTheTensorLast() {
        assertThat(new long[] {DLManagedTensorVersioned.VERSION, DLManagedTensorVersioned.MANAGER_CTX,
                DLManagedTensorVersioned.DELETER, DLManagedTensorVersioned.FLAGS, DLManagedTensorVersioned.DL_TENSOR,
                DLManagedTensorVersioned.SIZE}).containsExactly(0, 8, 16, 24, 32, 80);
    }

    @Test
    void exchangeApiHeaderIsVersionAndPreviousTable() {
        assertThat(new long[] {DLPackExchangeAPIHeader.VERSION, DLPackExchangeAPIHeader.PREV_API,
                DLPackExchangeAPIHeader.SIZE}).containsExactly(0, 8, 16);
    }

    @Test
    void exchangeApiTableHasFiveCallbacksAfterTheHeader() {
        assertThat(new long[] {DLPackExchangeAPI.HEADER, DLPackExchangeAPI.MANAGED_TENSOR_ALLOCATOR,
                DLPackExchangeAPI.MANAGED_TENSOR_FROM_PY_OBJECT_NO_SYNC, DLPackExchangeAPI.MANAGED_TENSOR_TO_PY_OBJECT_NO_SYNC,
                DLPackExchangeAPI.DLTENSOR_FROM_PY_OBJECT_NO_SYNC, DLPackExchangeAPI.CURRENT_WORK_STREAM,
                DLPackExchangeAPI.SIZE}).containsExactly(0, 16, 24, 32, 40, 48, 56);
    }

    @Test
    void versionConstantsAreDlpack13() {
        assertThat(DlpackVersion.CURRENT).isEqualTo(new DlpackVersion(1, 3));
        assertThat(DlpackVersion.CURRENT.toString()).isEqualTo("1.3");
        assertThat(new DlpackVersion(1, 10)).isGreaterThan(new DlpackVersion(1, 3));
    }

    @Test
    void flagsAreTheThreeDefinedBits() {
        assertThat(new long[] {DlpackFlags.READ_ONLY, DlpackFlags.IS_COPIED, DlpackFlags.IS_SUBBYTE_TYPE_PADDED,
                DlpackFlags.ALL}).containsExactly(1, 2, 4, 7);
        assertThat(DlpackFlags.toString(3)).isEqualTo("READ_ONLY|IS_COPIED");
        assertThat(DlpackFlags.toString(8)).isEqualTo("0x8");
    }
}
