package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.Device;
import io.github.dlpack4j.DeviceType;
import io.github.dlpack4j.DlpackException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Producers whose protocol methods return what DLPack does not allow: each result a Java type is
 * made from is checked, and a wrong one is a {@link DlpackException} naming the producer and the value.
 */
@Tag("any-cpython")
class HostileProducerTest {
    static final Python PY = Python.start();

    static {
        PY.exec("""
                class Device:
                    def __init__(self, result): self.result = result
                    def __dlpack_device__(self): return self.result
                    def __dlpack__(self, **kw): raise AssertionError('not asked')
                """);
    }

    @ParameterizedTest
    @ValueSource(strings = {"None", "5", "'cpu'", "(1,)", "(1, 0, 0)", "(1.0, 0)", "('1', 0)", "(1, None)", "(True, 0)",
            "{'type': 1}", "(99, 0)", "(5, 0)", "(1, -1)", "(1, 2**31)", "(2**40, 0)", "(2**70, 0)", "(1, 2**70)"})
    void aDeviceThatIsNotATwoTupleOfValidIntsIsADlpackExceptionNamingTheValue(String result) {
        try (PyObject producer = PY.eval("Device(" + result + ")"); PyObject repr = PY.eval("repr(" + result + ")")) {
            ImportRequest r = ImportRequest.of(producer);
            assertThatThrownBy(r::device).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("__dlpack_device__ of Device returned " + repr.str());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"(1, 0)", "[1, 0]", "(2, 3)", "(__import__('enum').IntEnum('T', {'kDLCPU': 1}).kDLCPU, 0)"})
    void aWellFormedDeviceIsRead(String result) {
        try (PyObject producer = PY.eval("Device(" + result + ")")) {
            Device d = ImportRequest.of(producer).device();
            assertThat(d.type()).isIn(DeviceType.CPU, DeviceType.CUDA);
            assertThat(d.id()).isIn(0, 3);
        }
    }
}
