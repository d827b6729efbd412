package io.github.dlpack4j;

import java.lang.ref.Reference;

/**
 * The duty to release one foreign allocation, moved out of a {@link ManagedTensor} by
 * {@link ManagedTensor#intoDeleter()}: a container that keeps the data pointer and metadata itself
 * holds this and closes it when it frees its storage. It runs the producer's deleter at most once;
 * if it is never closed, a {@code Cleaner} runs it once it is unreachable.
 */
public final class AllocationDeleter implements AutoCloseable {
    private final TensorHandle handle;
    @SuppressWarnings("unused") // keeps the memory reachable, so that the cleaner waits for this object
    private final MemoryOwner memory;

    AllocationDeleter(TensorHandle handle, MemoryOwner memory) {
        this.handle = handle;
        this.memory = memory;
    }

    /** Releases the allocation (the producer's deleter runs now, or when the last export of it is deleted). */
    @Override
    public void close() {
        handle.close();
        Reference.reachabilityFence(this); // keeps the watched memory reachable: the deleter runs here
    }

    /** {@return whether {@link #close()} has run} */
    public boolean isClosed() {
        return handle.isClosed();
    }
}
