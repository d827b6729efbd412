package io.github.dlpack4j.image;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.Dlpack;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test if, after it, an export was not deleted or dlpack4j's native bytes are not back where
 * they were. Images and tensors the test dropped are collected first, so that their cleaners count:
 * an image from {@code toImage} lets go of its memory only that way.
 */
final class NoLeaks implements BeforeEachCallback, AfterEachCallback {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(NoLeaks.class);

    @Override
    public void beforeEach(ExtensionContext context) {
        settle(-1);
        context.getStore(NS).put("bytes", Dlpack.nativeBytesInUse());
        context.getStore(NS).put("exports", Dlpack.liveExports());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        long bytes = context.getStore(NS).get("bytes", Long.class);
        settle(bytes);
        assertThat(Dlpack.liveExports()).as("exports whose deleter never ran")
                .isEqualTo(context.getStore(NS).get("exports", Integer.class));
        assertThat(Dlpack.nativeBytesInUse()).as("dlpack4j's native bytes still allocated").isEqualTo(bytes);
    }

    /** Collects garbage until the native bytes are {@code target}, or stop changing when it is -1 (bounded). */
    static void settle(long target) {
        long previous = -1;
        for (int i = 0; i < 50; i++) {
            long now = Dlpack.nativeBytesInUse();
            if (now == target || target < 0 && now == previous && i >= 2) {
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
