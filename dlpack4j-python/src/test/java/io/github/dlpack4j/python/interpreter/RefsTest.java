package io.github.dlpack4j.python.interpreter;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Reference counts changed in Java agree with CPython's own, on every CPython the suite runs on. */
@Tag("any-cpython")
class RefsTest {
    static final Python PY = Python.start();

    private static long refcount(String name) {
        try (PyObject n = PY.eval("sys.getrefcount(" + name + ")")) {
            return n.asLong();
        }
    }

    @Test
    void anIncrementAndADecrementChangeTheCountAsPythonSeesIt() {
        PY.exec("import sys\nrefs_obj = object()");
        long before = refcount("refs_obj");
        try (PyObject o = PY.getGlobal("refs_obj")) {
            long held = refcount("refs_obj");
            MemorySegment p = o.address();
            Gil.with(() -> {
                Refs.incRef(p);
                Refs.incRef(p);
                return null;
            });
            assertThat(refcount("refs_obj")).isEqualTo(held + 2);
            Gil.with(() -> {
                Refs.decRef(p);
                Refs.decRef(p);
                return null;
            });
            assertThat(refcount("refs_obj")).isEqualTo(held);
        }
        assertThat(refcount("refs_obj")).isEqualTo(before);
    }

    @Test
    void theLastDecrementFreesTheObject() {
        PY.exec("import weakref\nclass RefsProbe: pass\nrefs_probe = RefsProbe()\nrefs_weak = weakref.ref(refs_probe)");
        PyObject o = PY.getGlobal("refs_probe");
        PY.exec("del refs_probe");
        try (PyObject alive = PY.eval("refs_weak() is not None")) {
            assertThat(alive.asBoolean()).isTrue();
        }
        o.close(); // on a thread without the GIL: queued, then done by the next call's GIL
        try (PyObject alive = PY.eval("refs_weak() is not None")) {
            assertThat(alive.asBoolean()).as("freed by the last decrement").isFalse();
        }
    }

    @Test
    void immortalObjectsKeepTheirCountAndMortalOnesAreCountedOnEveryVersion() {
        try (PyObject version = PY.eval("sys.version_info.minor"); PyObject none = PY.eval("None")) {
            long before = refcount("None");
            MemorySegment p = none.address();
            Gil.with(() -> {
                for (int i = 0; i < 1000; i++) {
                    Refs.incRef(p);
                }
                for (int i = 0; i < 1000; i++) {
                    Refs.decRef(p);
                }
                return null;
            });
            assertThat(refcount("None")).isEqualTo(before);
            if (version.asLong() >= 12) {
                long word = RawMemory.word(p.address());
                assertThat((int) word).as("None is immortal on 3.12+: a negative 32-bit count").isNegative();
            }
        }
    }
}
