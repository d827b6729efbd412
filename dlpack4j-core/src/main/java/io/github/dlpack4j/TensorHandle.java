package io.github.dlpack4j;

import io.github.dlpack4j.internal.SafetyNet;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;

/**
 * The open/closed state shared by an owning {@link Tensor} and all views made from it, and the one
 * hold on the tensor's memory that closing it lets go of. Closing happens once, whoever races to it
 * (the tensor's {@code close()}, a {@link ManagedTensor}, an {@link AllocationDeleter}); a handle
 * never closed lets go of its hold through the {@code Cleaner} once unreachable.
 */
final class TensorHandle {
    private static final VarHandle CLOSED;

    static {
        try {
            CLOSED = MethodHandles.lookup().findVarHandle(TensorHandle.class, "closed", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private volatile boolean closed;
    private Cleaner.Cleanable hold;

    /** A handle whose closing cleans {@code hold} (an owner's hold on its memory, {@link MemoryOwner#ownerHold()}). */
    TensorHandle(Cleaner.Cleanable hold) {
        this.hold = hold;
    }

    private TensorHandle() {}

    /** A handle holding one more reference to {@code memory}, released by close or once unreachable. */
    static TensorHandle holding(MemoryOwner memory) {
        TensorHandle h = new TensorHandle();
        h.hold = SafetyNet.register(h, memory::release);
        return h;
    }

    /** Closes once; returns whether this call closed it. */
    boolean close() {
        if (!CLOSED.compareAndSet(this, false, true)) {
            return false;
        }
        hold.clean();
        Reference.reachabilityFence(this); // the referent of a share's hold
        return true;
    }

    /** {@return whether {@link #close()} has run} */
    boolean isClosed() {
        return closed;
    }
}
