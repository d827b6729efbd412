package io.github.dlpack4j;

import io.github.dlpack4j.testing.RawAccessContract;
import org.junit.jupiter.api.Test;

/** {@link RawAccessContract} for a {@link ManagedTensor} adopted directly: Java memory, exported, then adopted. */
class RawAccessTest {
    private static final RawAccessContract.Source ADOPTED = () -> {
        float[] values = new float[RawAccessContract.N];
        for (int i = 0; i < values.length; i++) {
            values[i] = i + 1;
        }
        try (Tensor t = Tensor.of(values)) {
            ManagedTensor m = ManagedTensor.adoptVersioned(Dlpack.exportVersioned(t));
            return new RawAccessContract.Imported(m.tensor(), m);
        }
    };

    @Test
    void aSegmentUsedAfterTheReleaseThrowsOnEveryThread() throws Exception {
        RawAccessContract.aSegmentUsedAfterTheReleaseThrowsOnEveryThread(ADOPTED);
    }

    @Test
    void aReaderRacingTheReleaseNeverSeesFreedMemory() throws Exception {
        RawAccessContract.aReaderRacingTheReleaseNeverSeesFreedMemory(ADOPTED, 10_000);
    }

    @Test
    void aNativeCallKeepsTheMemoryUntilItReturns() throws Throwable {
        RawAccessContract.aNativeCallKeepsTheMemoryUntilItReturns(ADOPTED);
    }
}
