package io.github.dlpack4j;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test that leaves an export undeleted or native memory allocated: after each test, every
 * export has been deleted and the library's native bytes are back where they were before it.
 * Tensors a test forgot to close are collected first, so that the cleaner's safety net counts.
 */
public final class NoLeaks implements BeforeEachCallback, AfterEachCallback {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(NoLeaks.class);

    @Override
    public void beforeEach(ExtensionContext context) {
        settle();
        context.getStore(NS).put("bytes", Dlpack.nativeBytesInUse());
        context.getStore(NS).put("exports", Dlpack.liveExports());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        long bytesBefore = context.getStore(NS).get("bytes", Long.class);
        int exportsBefore = context.getStore(NS).get("exports", Integer.class);
        settle();
        assertThat(Dlpack.liveExports()).as("exports whose deleter never ran").isEqualTo(exportsBefore);
        assertThat(Dlpack.nativeBytesInUse()).as("native bytes still allocated").isEqualTo(bytesBefore);
    }

    /** Runs the garbage collector until the cleaner has nothing left to release (bounded). */
    static void settle() {
        long previous = -1;
        for (int i = 0; i < 20; i++) {
            long now = Dlpack.nativeBytesInUse();
            if (now == previous && i >= 2) {
                return;
            }
            previous = now;
            System.gc();
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
