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
 * never closed lets go of its hold through the {@code Cleaner} once unreachable. A
 * {@link ManagedTensor}'s handle also records that {@link ManagedTensor#intoDeleter()} moved it, so
 * that closing an import is one compare-and-set.
 */
final class TensorHandle {
    private static final VarHandle STATE;
    private static final int CLOSED = 1;
    private static final int MOVED = 2;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(TensorHandle.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** {@link #CLOSED} and {@link #MOVED} bits; 0 while open (the default: no initialiser, no fence). */
    private volatile int state;
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

    /** Closes once, moved or not; returns whether this call closed it. */
    boolean close() {
        int s;
        do {
            s = state;
            if ((s & CLOSED) != 0) {
                return false;
            }
        } while (!STATE.compareAndSet(this, s, s | CLOSED));
        released();
        return true;
    }

    /** Closes unless closed or moved (a {@link ManagedTensor}'s {@code close()}); returns whether this call closed it. */
    boolean closeUnlessMoved() {
        if (!STATE.compareAndSet(this, 0, CLOSED)) {
            return false;
        }
        released();
        return true;
    }

    private void released() {
        hold.clean();
        Reference.reachabilityFence(this); // the referent of a share's hold
    }

    /** Marks an open handle moved ({@link ManagedTensor#intoDeleter()}); false if it was closed or moved. */
    boolean move() {
        return STATE.compareAndSet(this, 0, MOVED);
    }

    /** {@return whether {@link #move()} has run} */
    boolean isMoved() {
        return (state & MOVED) != 0;
    }

    /** {@return whether {@link #close()} has run} */
    boolean isClosed() {
        return (state & CLOSED) != 0;
    }
}
