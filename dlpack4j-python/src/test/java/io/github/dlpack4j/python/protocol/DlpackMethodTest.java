package io.github.dlpack4j.python.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.python.ImportPath;
import io.github.dlpack4j.python.ImportRequest;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import io.github.dlpack4j.python.interpreter.Gil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The {@code __dlpack__} called without a lookup per object: found for NumPy's immutable
 * {@code ndarray}, and for no type whose objects could find another one.
 */
class DlpackMethodTest {
    static final Python PY = Python.start();

    static {
        PY.exec("""
                import numpy as np
                class Sub(np.ndarray):
                    pass
                class Own:
                    def __init__(self, a):
                        self.a = a
                    def __dlpack__(self, **kwargs):
                        return self.a.__dlpack__(**kwargs)
                    def __dlpack_device__(self):
                        return self.a.__dlpack_device__()
                class Slotted:
                    __slots__ = ('a',)
                    def __init__(self, a):
                        self.a = a
                    def __dlpack__(self, **kwargs):
                        return self.a.__dlpack__(**kwargs)
                    def __dlpack_device__(self):
                        return self.a.__dlpack_device__()
                """);
    }

    @Test
    void numpysNdarrayHasItsOwnMethod() {
        try (PyObject type = PY.eval("np.ndarray"); PyObject expected = PY.eval("np.ndarray.__dict__['__dlpack__']")) {
            PyObject m = Gil.with(() -> DlpackMethod.of(type));
            assertThat(m).isNotNull();
            try (m) {
                assertThat(m.address().address()).isEqualTo(expected.address().address());
            }
        }
    }

    /** Mutable classes (a subclass of ndarray, plain Python classes, with or without a __dict__) and a type without one. */
    @ParameterizedTest
    @ValueSource(strings = {"Sub", "Own", "Slotted", "int", "type(None)"})
    void noTypeWhoseObjectsCouldFindAnotherOneHasIt(String type) {
        try (PyObject t = PY.eval(type)) {
            assertThat(Gil.with(() -> DlpackMethod.of(t))).isNull();
        }
    }

    /** Each route still imports the right data: the type's method, and a subclass's lookup. */
    @Test
    void importsGoOnGivingTheProducersData() {
        try (PyObject a = PY.eval("np.arange(6.0).reshape(2, 3)");
             PyObject sub = PY.eval("np.arange(6.0).view(Sub) * 2");
             PyObject own = PY.eval("Own(np.arange(3.0) + 10)")) {
            for (int i = 0; i < 3; i++) {
                try (ManagedTensor m = PythonDlpack.fromDlpack(a); ManagedTensor s = PythonDlpack.fromDlpack(sub);
                     ManagedTensor o = PythonDlpack.fromDlpack(own)) {
                    assertThat(m.tensor().getDouble(1, 2)).isEqualTo(5.0);
                    assertThat(s.tensor().getDouble(5)).isEqualTo(10.0);
                    assertThat(o.tensor().getDouble(2)).isEqualTo(12.0);
                }
            }
            ImportRequest r = ImportRequest.of(a);
            try (ManagedTensor m = r.importTensor()) {
                assertThat(r.path()).isEqualTo(ImportPath.DLPACK);
                assertThat(m.tensor().getDouble(0, 1)).isEqualTo(1.0);
            }
        }
    }
}
