package io.github.dlpack4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.Dlpack;

/** dlpack4j's native bytes and live exports, taken before a test and awaited after it. */
record Baseline(long bytes, int exports) {
    static Baseline now() {
        return new Baseline(Dlpack.nativeBytesInUse(), Dlpack.liveExports());
    }

    /** Waits (collecting Python's and Java's garbage) until both counts are back, then asserts they are. */
    void assertBack() {
        for (int i = 0; i < 100 && !isBack(); i++) {
            Models.PY.exec("gc.collect()"); // also runs deleters deferred to the next GIL holder
            System.gc();
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        assertThat(Dlpack.nativeBytesInUse()).as("dlpack4j's native bytes").isEqualTo(bytes);
        assertThat(Dlpack.liveExports()).as("live exports").isEqualTo(exports);
    }

    private boolean isBack() {
        return Dlpack.nativeBytesInUse() == bytes && Dlpack.liveExports() == exports;
    }
}
