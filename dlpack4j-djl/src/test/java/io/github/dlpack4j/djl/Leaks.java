package io.github.dlpack4j.djl;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.Dlpack;

/**
 * dlpack4j's native bytes and live exports, and the libtorch aliases and tensor shares that
 * dlpack4j-djl holds, taken before a test and awaited (collecting garbage) after it.
 */
record Leaks(long bytes, int exports, long held, long lent) {
    static Leaks now() {
        return new Leaks(Dlpack.nativeBytesInUse(), Dlpack.liveExports(), NDArrayToTensor.HELD.sum(),
                TensorToNDArray.LENT.sum());
    }

    void assertBack() {
        for (int i = 0; i < 100 && !equals(now()); i++) {
            System.gc();
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        Leaks after = now();
        assertThat(after.bytes()).as("dlpack4j's native bytes").isEqualTo(bytes);
        assertThat(after.exports()).as("live exports").isEqualTo(exports);
        assertThat(after.held()).as("libtorch aliases held by tensors").isEqualTo(held);
        assertThat(after.lent()).as("tensor shares held by arrays").isEqualTo(lent);
    }
}
