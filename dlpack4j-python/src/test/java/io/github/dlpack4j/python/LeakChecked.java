package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.Dlpack;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * Tests that exchange tensors with Python: each test leaves no export and no native byte behind,
 * once Python collected and dropped the globals named {@code x_...} the test made.
 */
abstract class LeakChecked {
    static final Python PY = Python.start();

    /** Live exports and native bytes when the test began. */
    int exportsBefore;
    long bytesBefore;

    @BeforeEach
    void countExports() {
        PY.exec("import gc\ngc.collect()");
        exportsBefore = Dlpack.liveExports();
        bytesBefore = Dlpack.nativeBytesInUse();
    }

    @AfterEach
    void nothingLeaks() {
        PY.exec("""
                import gc
                for _n in [n for n in globals() if n.startswith('x_')]:
                    del globals()[_n]
                gc.collect()""");
        assertThat(Dlpack.liveExports()).isEqualTo(exportsBefore);
        assertThat(Dlpack.nativeBytesInUse()).isEqualTo(bytesBefore);
    }
}
