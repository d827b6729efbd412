package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;

import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.python.interpreter.PendingReleases;
import io.github.dlpack4j.python.protocol.JavaTensorType;

/**
 * What a test that imports, exports and calls across many threads must leave as it found it: the
 * live exports, the {@code dlpack4j.Tensor} objects, the native bytes and the reference counts of
 * the Python globals it names, taken before (after a {@code gc.collect()}) and checked after, once
 * Python's collector and the deleters queued by the threads have run.
 */
final class PythonLeaks {
    private final Python py;
    private final Map<String, Long> refs = new LinkedHashMap<>();
    private final int exports;
    private final int instances;
    private final long bytes;

    private PythonLeaks(Python py, String... globals) {
        this.py = py;
        py.exec("import gc, sys; gc.collect()");
        exports = Dlpack.liveExports();
        instances = JavaTensorType.liveInstances();
        bytes = Dlpack.nativeBytesInUse();
        for (String g : globals) {
            refs.put(g, refcount(g));
        }
    }

    /** {@return the counts now}, and the reference counts of {@code globals} */
    static PythonLeaks now(Python py, String... globals) {
        return new PythonLeaks(py, globals);
    }

    /** Fails unless every count is back where it was: each deleter ran once. */
    void assertBack() {
        py.exec("gc.collect()"); // takes the GIL: what the threads queued runs first
        assertThat(PendingReleases.pendingDeleters()).as("deleters queued").isZero();
        refs.forEach((g, before) -> assertThat(refcount(g)).as("references to " + g).isEqualTo(before));
        assertThat(Dlpack.liveExports()).as("live exports").isEqualTo(exports);
        assertThat(JavaTensorType.liveInstances()).as("dlpack4j.Tensor objects").isEqualTo(instances);
        assertThat(Dlpack.nativeBytesInUse()).as("native bytes").isEqualTo(bytes);
    }

    private long refcount(String global) {
        try (PyObject n = py.eval("sys.getrefcount(" + global + ")")) {
            return n.asLong();
        }
    }
}
