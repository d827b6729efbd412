package io.github.dlpack4j.python;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.testing.RawAccessContract;
import org.junit.jupiter.api.Test;

/**
 * {@link RawAccessContract} for imports from numpy ({@code __dlpack__}) and torch (the C Exchange
 * API): memory that Python frees once the import lets go of the last reference to it.
 */
class RawAccessTest {
    private static final Python PY = Python.start();

    static {
        PY.exec("import numpy, torch");
    }

    /** An import of {@code expr}, a fresh array of 1..N that nothing in Python keeps. */
    private static RawAccessContract.Source importOf(String expr) {
        String code = expr.formatted(RawAccessContract.N);
        return () -> PY.withGil(() -> {
            try (PyObject fresh = PY.eval(code)) {
                ManagedTensor m = PythonDlpack.fromDlpack(fresh);
                return new RawAccessContract.Imported(m.tensor(), m);
            }
        });
    }

    private static final RawAccessContract.Source NUMPY = importOf("numpy.arange(1, %d + 1, dtype=numpy.float32)");
    private static final RawAccessContract.Source TORCH = importOf("torch.arange(1, %d + 1, dtype=torch.float32)");

    @Test
    void aSegmentOfANumpyImportUsedAfterTheReleaseThrowsOnEveryThread() throws Exception {
        RawAccessContract.aSegmentUsedAfterTheReleaseThrowsOnEveryThread(NUMPY);
    }

    @Test
    void aReaderRacingTheReleaseOfANumpyImportNeverSeesFreedMemory() throws Exception {
        RawAccessContract.aReaderRacingTheReleaseNeverSeesFreedMemory(NUMPY, 10_000);
    }

    @Test
    void aNativeCallKeepsANumpyImportsMemoryUntilItReturns() throws Throwable {
        RawAccessContract.aNativeCallKeepsTheMemoryUntilItReturns(NUMPY);
    }

    @Test
    void aSegmentOfATorchImportUsedAfterTheReleaseThrowsOnEveryThread() throws Exception {
        RawAccessContract.aSegmentUsedAfterTheReleaseThrowsOnEveryThread(TORCH);
    }

    @Test
    void aReaderRacingTheReleaseOfATorchImportNeverSeesFreedMemory() throws Exception {
        RawAccessContract.aReaderRacingTheReleaseNeverSeesFreedMemory(TORCH, 10_000);
    }

    @Test
    void aNativeCallKeepsATorchImportsMemoryUntilItReturns() throws Throwable {
        RawAccessContract.aNativeCallKeepsTheMemoryUntilItReturns(TORCH);
    }
}
