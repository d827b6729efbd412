package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.protocol.JavaTensorType;
import org.junit.jupiter.api.Test;

class ExportSoakTest {
    static final Python PY = Python.start();

    @Test
    void aMillionConsumedAndAHundredThousandUnconsumedExportsKeepRssFlatAndLeaveNothingRegistered() throws Exception {
        PY.exec("""
                import numpy as np, torch, gc
                def soak_exports(obj, n):
                    total = 0.0
                    for i in range(n // 2):
                        total += float(np.from_dlpack(obj)[7])
                        total += float(torch.from_dlpack(obj)[7])
                    for i in range(n // 10):
                        obj.__dlpack__(max_version=(1, 3) if i % 2 else None)  # never consumed
                    return total""");
        PY.exec("gc.collect()");
        int exportsBefore = Dlpack.liveExports();
        int instancesBefore = JavaTensorType.liveInstances();
        long bytesBefore = Dlpack.nativeBytesInUse();
        try (Tensor t = Tensor.of(new double[] {0, 1, 2, 3, 4, 5, 6, 7}); PyObject obj = PythonDlpack.toPython(t)) {
            PY.setGlobal("soak_obj", obj);
        }
        assertThat(JavaTensorType.liveInstances()).isEqualTo(instancesBefore + 1);
        run(1_000_000); // warm-up: JIT, caches, the Java heap and malloc's arenas
        long rssBefore = ProcessMemory.residentKiB();
        run(1_000_000);
        long rssAfter = ProcessMemory.residentKiB();
        System.out.printf("export soak: %d KiB more resident over 1,000,000 consumed and 100,000 unconsumed exports%n",
                rssAfter - rssBefore);
        assertThat(Dlpack.liveExports()).as("exports whose deleter has not run").isEqualTo(exportsBefore);
        // Bound: 32 MiB more resident memory (the heap is fixed and pre-touched); one leaked
        // export of ~200 bytes per call would be about 210 MiB.
        assertThat(rssAfter - rssBefore).as("RSS gained, KiB").isLessThan(32 * 1024);
        PY.exec("del soak_obj\ngc.collect()");
        assertThat(JavaTensorType.liveInstances()).as("dlpack4j.Tensor objects alive").isEqualTo(instancesBefore);
        assertThat(Dlpack.nativeBytesInUse()).as("native bytes after the owner and Python let go").isEqualTo(bytesBefore);
    }

    private static void run(int n) {
        try (PyObject total = PY.eval("soak_exports(soak_obj, " + n + ")")) {
            assertThat(total.asDouble()).isEqualTo(7.0 * n);
        }
    }
}
