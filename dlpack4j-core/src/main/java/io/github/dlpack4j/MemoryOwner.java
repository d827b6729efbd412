package io.github.dlpack4j;

import io.github.dlpack4j.internal.SafetyNet;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/**
 * One block of tensor memory, shared by every {@link Tensor} view of it, and the reference count that
 * decides when it is released.
 *
 * <h2>Why this and not one shared {@code Arena} per tensor</h2>
 * Closing a shared arena costs a handshake with every JVM thread (about 70 µs), which would make a
 * DLPack round trip a thousand times slower than the struct work it wraps. Instead:
 * <ul>
 *   <li>The memory has <em>holders</em>: the owning handle (a {@link Tensor} or {@link ManagedTensor})
 *       and each live export. It is released (freed, or the producer's deleter called) exactly once,
 *       when the last holder lets go, on whatever thread that is.</li>
 *   <li>Library code that touches the memory does so between {@link #enter()} and {@link #exit()},
 *       an in-flight count packed with a closed bit in one word. Release first sets the bit, so new
 *       accesses fail with {@link IllegalStateException}; if none is in flight it frees at once,
 *       else the access that ends last frees, on its own thread (a {@code close()} inside
 *       {@link Tensor#withData} frees as the body returns): a read after release is an exception,
 *       never a segfault, and a release never waits.</li>
 *   <li>Only when a caller asks for the raw {@link MemorySegment} ({@link Tensor#data()}, typed
 *       buffers) is a shared arena made for it, lazily, so that the JVM itself checks those accesses;
 *       only such tensors pay the handshake at release. {@link Tensor#withData} binds the memory to a
 *       confined arena for one call instead, inside an access: its close needs no handshake.</li>
 * </ul>
 * The {@link SafetyNet} releases the owning handle's hold when every view of the memory is
 * unreachable and the handle was never closed.
 */
final class MemoryOwner {
    /** The whole reachable block; its scope is global (checked by {@link #enter}) or the caller's. */
    final MemorySegment base;
    private final Lifetime life;

    private MemoryOwner(MemorySegment base, Lifetime life) {
        this.base = base;
        this.life = life;
    }

    /** Memory with one holder, the caller, who releases it with the returned handle. */
    static MemoryOwner create(MemorySegment base, Runnable release, boolean borrowed) {
        return new MemoryOwner(base, new Lifetime(release, borrowed));
    }

    /**
     * Memory with one holder, released by {@code life}'s own {@link Lifetime#free()}: a release
     * action and the counts in one object (an import's deleter call).
     */
    static MemoryOwner create(MemorySegment base, Lifetime life) {
        return new MemoryOwner(base, life);
    }

    /**
     * Registers the initial hold for release by {@code Cleanable.clean()}, or by the cleaner once this
     * memory is unreachable. Called once, right after {@link #create}.
     */
    Cleaner.Cleanable ownerHold() {
        return SafetyNet.register(this, life);
    }

    /** Adds a holder; the memory stays allocated until it calls {@link #release()}. */
    void retain() {
        life.retain();
    }

    /** Removes a holder; the last one releases the memory. */
    void release() {
        life.release();
    }

    /** Starts an access; throws {@link IllegalStateException} if the memory was released. */
    void enter() {
        life.enter();
    }

    /** Ends an access begun by {@link #enter()}. */
    void exit() {
        life.exit();
    }

    boolean isAlive() {
        return life.isAlive();
    }

    /** {@code base} bound to a shared arena that closes on release, so the JVM checks every access. */
    MemorySegment scopedBase() {
        return life.scoped(base);
    }

    /**
     * {@code body} applied to {@code t}'s bytes bound to a confined arena of the calling thread that
     * closes when {@code body} returns: after it, or from another thread, the segment fails instead
     * of reading. The caller holds {@link #enter()}, which keeps the memory from being released
     * meanwhile; closing a confined arena needs no handshake. Borrowed memory ({@code wrap} with no
     * release action) keeps the caller's segment, whose scope is the caller's arena.
     */
    <R> R confined(Tensor t, Function<? super MemorySegment, ? extends R> body) {
        if (life.borrowed) {
            return body.apply(t.reachable(base));
        }
        try (Arena call = Arena.ofConfined()) {
            return body.apply(t.reachable(base.reinterpret(call, null)));
        }
    }

    /**
     * The counts and the release action, apart from the owner so that the cleaner can reach them;
     * running it releases the owner's hold (itself the cleaning action: no lambda per tensor). A
     * subclass may be the release action too ({@link #free()}), so that an import makes one object
     * for both.
     */
    static class Lifetime implements Runnable {
        private static final VarHandle HOLDERS;
        private static final VarHandle STATE;
        private static final int CLOSED = 1 << 31;
        /** Set with CLOSED while accesses are in flight: the access that ends last finishes the release. */
        private static final int OWED = 1 << 30;
        private static final int COUNT = OWED - 1;

        static {
            try {
                MethodHandles.Lookup l = MethodHandles.lookup();
                HOLDERS = l.findVarHandle(Lifetime.class, "holders", int.class);
                STATE = l.findVarHandle(Lifetime.class, "state", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        /** Null where a subclass overrides {@link #free()}. */
        private final Runnable release;
        private final boolean borrowed;
        /** Written plainly in the constructor: other threads reach this through final fields only. */
        @SuppressWarnings("unused") // through HOLDERS
        private volatile int holders;
        /** CLOSED bit, and the number of accesses in flight in the low bits. */
        @SuppressWarnings("unused") // through STATE
        private volatile int state;
        private Arena arena;
        private MemorySegment scoped;

        Lifetime(Runnable release, boolean borrowed) {
            this.release = release;
            this.borrowed = borrowed;
            // One holder, the owner. A plain write, not a volatile one (that is a full fence per
            // tensor): every thread reaches a Lifetime through final fields (the owner's, the safety
            // net entry's), whose freeze publishes this write with them.
            HOLDERS.set(this, 1);
        }

        /** The cleaning action: releases the owner's hold. */
        @Override
        public void run() {
            release();
        }

        /** Frees the memory, once, after the last holder let go and every access ended. */
        void free() {
            release.run();
        }

        void retain() {
            int h;
            do {
                h = (int) HOLDERS.getVolatile(this);
                if (h <= 0) {
                    throw new IllegalStateException("the tensor memory was already released");
                }
            } while (!HOLDERS.weakCompareAndSet(this, h, h + 1));
        }

        void release() {
            int h = (int) HOLDERS.getAndAdd(this, -1);
            if (h == 1) {
                destroy();
            } else if (h <= 0) {
                HOLDERS.getAndAdd(this, 1);
                throw new IllegalStateException("tensor memory released more often than it was held");
            }
        }

        void enter() {
            int s = (int) STATE.getAndAdd(this, 1);
            if ((s & CLOSED) != 0) {
                exit(); // may be the decrement that ends the last access of an owed release
                throw new IllegalStateException("tensor memory is closed: the owner was closed and every export was deleted");
            }
        }

        void exit() {
            if ((int) STATE.getAndAdd(this, -1) == (CLOSED | OWED | 1)) {
                finish(); // exactly one decrement takes the count from 1 to 0
            }
        }

        boolean isAlive() {
            return ((int) STATE.getVolatile(this) & CLOSED) == 0;
        }

        MemorySegment scoped(MemorySegment base) {
            if (borrowed) {
                return base; // the caller's segment carries the caller's own scope
            }
            enter();
            try {
                synchronized (this) {
                    if (scoped == null) {
                        arena = Arena.ofShared();
                        scoped = base.reinterpret(arena, null);
                    }
                    return scoped;
                }
            } finally {
                exit();
            }
        }

        private void destroy() {
            int s;
            int next;
            do {
                s = (int) STATE.getVolatile(this);
                next = (s & COUNT) == 0 ? s | CLOSED : s | CLOSED | OWED;
            } while (!STATE.weakCompareAndSet(this, s, next));
            if ((s & COUNT) == 0) {
                finish();
            }
            // Otherwise the access that ends last (maybe this thread's own: a close inside withData) finishes.
        }

        /** After the last access: closes data()'s arena and frees; another thread retries while a native call holds the arena. */
        private void finish() {
            if (closeArena()) {
                free();
                return;
            }
            Thread.ofPlatform().daemon().name("dlpack4j-release").start(() -> {
                for (int attempt = 0; !closeArena(); attempt++) {
                    LockSupport.parkNanos(Math.min(10_000_000L, 10_000L << Math.min(attempt, 10)));
                }
                free();
            });
        }

        /**
         * Closes the shared arena of {@link #scoped}, if any; false while a native call holds it. Only
         * from {@link #finish()}, once the last access ended: scoped() writes the fields between
         * enter() and exit(), so every exit() before it makes its writes visible here, and no
         * scoped() can enter any more.
         */
        private boolean closeArena() {
            Arena a = arena;
            if (a != null) {
                if (!tryClose(a)) {
                    return false;
                }
                arena = null;
                scoped = null;
            }
            return true;
        }

        private static boolean tryClose(Arena a) {
            try {
                a.close();
                return true;
            } catch (IllegalStateException busy) {
                return false;
            }
        }
    }
}
