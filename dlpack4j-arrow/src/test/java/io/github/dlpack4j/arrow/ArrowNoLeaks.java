package io.github.dlpack4j.arrow;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.Dlpack;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Gives each test a fresh {@link RootAllocator} (as a {@link BufferAllocator} parameter) and fails
 * the test if, after it, that allocator still holds memory, or an export was not deleted, or
 * dlpack4j's native bytes are not back where they were. Tensors a test forgot to close are
 * collected first, so that the cleaner's safety net counts.
 */
final class ArrowNoLeaks implements BeforeEachCallback, AfterEachCallback, ParameterResolver {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(ArrowNoLeaks.class);

    @Override
    public void beforeEach(ExtensionContext context) {
        settle(null);
        context.getStore(NS).put("bytes", Dlpack.nativeBytesInUse());
        context.getStore(NS).put("exports", Dlpack.liveExports());
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == BufferAllocator.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        return context.getStore(NS).computeIfAbsent("allocator", k -> new RootAllocator(), RootAllocator.class);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        RootAllocator allocator = context.getStore(NS).remove("allocator", RootAllocator.class);
        settle(allocator);
        if (allocator != null) {
            assertThat(allocator.getAllocatedMemory()).as("bytes still allocated from the test's allocator").isZero();
            allocator.close();
        }
        assertThat(Dlpack.liveExports()).as("exports whose deleter never ran")
                .isEqualTo(context.getStore(NS).get("exports", Integer.class));
        assertThat(Dlpack.nativeBytesInUse()).as("dlpack4j's native bytes still allocated")
                .isEqualTo(context.getStore(NS).get("bytes", Long.class));
    }

    /** Runs the garbage collector until the cleaner has nothing left to release (bounded). */
    static void settle(BufferAllocator allocator) {
        long previous = -1;
        for (int i = 0; i < 20; i++) {
            long now = Dlpack.nativeBytesInUse() + (allocator == null ? 0 : allocator.getAllocatedMemory());
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
