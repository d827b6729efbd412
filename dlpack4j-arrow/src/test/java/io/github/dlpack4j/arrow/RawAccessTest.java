package io.github.dlpack4j.arrow;

import io.github.dlpack4j.testing.RawAccessContract;
import io.github.dlpack4j.Tensor;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.Float4Vector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** {@link RawAccessContract} for Arrow vectors: memory that Arrow frees once the tensor lets go of the last reference. */
class RawAccessTest {
    private static final BufferAllocator ALLOCATOR = new RootAllocator();

    /** A fresh vector of 1..N as a tensor, the vector itself closed: the tensor holds the buffer's last reference. */
    private static final RawAccessContract.Source ARROW = () -> {
        try (Float4Vector v = new Float4Vector("x", ALLOCATOR)) {
            v.allocateNew(RawAccessContract.N);
            for (int i = 0; i < RawAccessContract.N; i++) {
                v.set(i, i + 1);
            }
            v.setValueCount(RawAccessContract.N);
            Tensor t = ArrowTensors.of(v);
            return new RawAccessContract.Imported(t, t);
        }
    };

    @AfterAll
    static void everyBufferWasReleased() throws InterruptedException {
        // A release that a native call held up (data()'s arena) finishes on another thread once the call returned.
        for (int i = 0; i < 500 && ALLOCATOR.getAllocatedMemory() != 0; i++) {
            Thread.sleep(10);
        }
        ALLOCATOR.close(); // throws if a buffer is still held
    }

    @Test
    void aSegmentOfAnArrowVectorUsedAfterTheReleaseThrowsOnEveryThread() throws Exception {
        RawAccessContract.aSegmentUsedAfterTheReleaseThrowsOnEveryThread(ARROW);
    }

    @Test
    void aReaderRacingTheReleaseOfAnArrowVectorNeverSeesFreedMemory() throws Exception {
        RawAccessContract.aReaderRacingTheReleaseNeverSeesFreedMemory(ARROW, 10_000);
    }

    @Test
    void aNativeCallKeepsAnArrowVectorsMemoryUntilItReturns() throws Throwable {
        RawAccessContract.aNativeCallKeepsTheMemoryUntilItReturns(ARROW);
    }
}
