package io.github.dlpack4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class DataTypeTest {
    @Test
    void everyDeviceCodeMapsBothWays() {
        int[] codes = {1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};
        assertThat(DeviceType.values()).hasSize(codes.length);
        for (int i = 0; i < codes.length; i++) {
            DeviceType t = DeviceType.values()[i];
            assertThat(t.code()).isEqualTo(codes[i]);
            assertThat(DeviceType.of(codes[i])).isSameAs(t);
        }
    }

    @Test
    void unknownDeviceCodesAreRefusedByName() {
        for (int code : new int[] {0, 5, 6, 19, -1, Integer.MAX_VALUE}) {
            assertThatThrownBy(() -> DeviceType.of(code)).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("device_type = " + code);
        }
    }

    @Test
    void everyTypeCodeMapsBothWays() {
        assertThat(DataTypeCode.values()).hasSize(18);
        for (int code = 0; code < 18; code++) {
            assertThat(DataTypeCode.of(code).code()).isEqualTo(code);
        }
        assertThat(DataTypeCode.FLOAT8_E4M3FN.code()).isEqualTo(10);
        assertThat(DataTypeCode.FLOAT4_E2M1FN.code()).isEqualTo(17);
        assertThatThrownBy(() -> DataTypeCode.of(18)).isInstanceOf(DlpackException.class).hasMessageContaining("dtype.code = 18");
    }

    @Test
    void namedDtypesHaveTheStandardCodesAndWidths() {
        assertThat(DataType.BOOL).isEqualTo(DataType.of(6, 8, 1));
        assertThat(DataType.COMPLEX64).isEqualTo(DataType.of(5, 64, 1));
        assertThat(DataType.BFLOAT16).isEqualTo(DataType.of(4, 16, 1));
        assertThat(DataType.UINT64).isEqualTo(DataType.of(1, 64, 1));
        assertThat(DataType.FLOAT6_E3M2FN).isEqualTo(DataType.of(16, 6, 1));
    }

    @Test
    void elementSizesCountLanesAndPackedSubByteTypes() {
        assertThat(DataType.FLOAT32.byteSize()).isEqualTo(4);
        assertThat(DataType.COMPLEX128.byteSize()).isEqualTo(16);
        assertThat(new DataType(DataTypeCode.FLOAT, 32, 4).byteSize()).isEqualTo(16);
        assertThat(DataType.FLOAT4_E2M1FN.isSubByte()).isTrue();
        assertThat(DataType.FLOAT4_E2M1FN.storageBytes(5, false)).isEqualTo(3);
        assertThat(DataType.FLOAT6_E2M3FN.storageBytes(4, false)).isEqualTo(3);
        assertThat(DataType.FLOAT6_E2M3FN.storageBytes(4, true)).isEqualTo(4);
        assertThat(new DataType(DataTypeCode.INT, 1, 1).storageBytes(9, false)).isEqualTo(2);
        assertThat(new DataType(DataTypeCode.INT, 4, 2).isSubByte()).isFalse();
    }

    @Test
    void combinationsTheStandardDoesNotDefineAreRefusedNamingTheField() {
        assertThatThrownBy(() -> DataType.of(15, 8, 1)).isInstanceOf(DlpackException.class)
                .hasMessageContaining("dtype.bits = 8").hasMessageContaining("it must be 6");
        assertThatThrownBy(() -> DataType.of(2, 32, 0)).hasMessageContaining("dtype.lanes = 0");
        assertThatThrownBy(() -> DataType.of(0, 12, 1)).hasMessageContaining("dtype.bits = 12");
        assertThatThrownBy(() -> DataType.of(6, 1, 1)).hasMessageContaining("dtype.bits = 1");
        assertThatThrownBy(() -> DataType.of(2, 0, 1)).hasMessageContaining("dtype.bits = 0");
        assertThatThrownBy(() -> DataType.of(99, 8, 1)).hasMessageContaining("dtype.code = 99");
    }

    @Test
    void javaElementTypesMapToDtypesAndBack() {
        for (Class<?> c : Arrays.asList(boolean.class, byte.class, short.class, char.class, int.class, long.class,
                float.class, double.class)) {
            DataType t = DataType.ofJavaType(c);
            assertThat(t.javaType()).contains(c);
        }
        assertThat(DataType.ofJavaType(float.class)).isEqualTo(DataType.FLOAT32);
        assertThat(DataType.BFLOAT16.javaType()).isEmpty();
        assertThatThrownBy(() -> DataType.ofJavaType(String.class)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void dtypesPrintAsNumpyNamesThem() {
        assertThat(DataType.FLOAT32).hasToString("float32");
        assertThat(DataType.BOOL).hasToString("bool");
        assertThat(DataType.FLOAT8_E4M3FN).hasToString("float8_e4m3fn");
        assertThat(new DataType(DataTypeCode.INT, 8, 4)).hasToString("int8x4");
        assertThat(Device.CPU).hasToString("cpu:0");
    }
}
