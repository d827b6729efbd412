package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import org.junit.jupiter.api.Test;

class SoakTest {
    static final Python PY = Python.start();

    @Test
    void aMillionCreateCallCloseCyclesHalfInScopesLeaveObjectCountAndRssFlat() throws IOException {
        PY.exec("import gc\ndef ident(x):\n    return x");
        try (PyObject ident = PY.getGlobal("ident"); PyObject gcModule = PY.importModule("gc")) {
            cycles(ident, 1_000_000); // warm up: JIT, caches, the Java heap growing to its working size
            long objectsBefore = objectCount(gcModule);
            long rssBefore = ProcessMemory.residentKiB();
            cycles(ident, 1_000_000);
            long objectsAfter = objectCount(gcModule);
            long rssAfter = ProcessMemory.residentKiB();
            System.out.printf("soak: %d more Python objects, %d KiB more resident%n",
                    objectsAfter - objectsBefore, rssAfter - rssBefore);
            // Bounds: at most 100 more tracked Python objects, and at most 32 MiB more resident memory
            // (the heap is fixed and pre-touched) (a leak of one 32-byte Python object per cycle would be 30 MiB,
            // of one str with its PyObject far more).
            assertThat(objectsAfter - objectsBefore).as("Python objects gained").isLessThan(100);
            assertThat(rssAfter - rssBefore).as("RSS gained, KiB").isLessThan(32 * 1024);
        }
    }

    /** {@code n} cycles in blocks of 1,000, every other block inside one GIL scope. */
    private static void cycles(PyObject ident, int n) {
        for (int block = 0; block < n / 1000; block++) {
            Runnable cycles = () -> {
                for (int i = 0; i < 1000; i++) {
                    try (PyObject arg = PY.toPython(java.util.List.of(i & 1023)); PyObject r = ident.call(arg)) { // a list: tracked by gc
                        if (r.isNone()) {
                            throw new AssertionError();
                        }
                    }
                }
            };
            if (block % 2 == 0) {
                cycles.run();
            } else {
                PY.withGil(cycles);
            }
        }
    }

    private static long objectCount(PyObject gcModule) {
        try (PyObject collected = gcModule.callMethod("collect"); PyObject objects = gcModule.callMethod("get_objects");
             PyObject n = objects.callMethod("__len__")) {
            return n.asLong();
        }
    }
}
