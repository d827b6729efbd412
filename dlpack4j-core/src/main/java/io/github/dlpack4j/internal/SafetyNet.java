package io.github.dlpack4j.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;
import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs an action once an object has become unreachable, unless the action ran first through the
 * returned {@link Cleaner.Cleanable}: the safety net under every owning handle, which a user who
 * forgets {@code close()} falls into. It is what {@link Cleaner} does, made cheap enough for one
 * registration per import: a {@code Cleaner} registers and unregisters under one lock, two monitor
 * round trips that cost about 50 ns a pair on the machines we measure on, which was most of what a
 * NumPy import cost beyond Python's own {@code numpy.from_dlpack}; here a registration and its
 * {@code clean()} on the same thread take no lock and one compare-and-set (about 20 ns).
 *
 * <p>Not API: public for dlpack4j's own modules only (exported to them alone on the module path).
 *
 * <h2>How</h2>
 * <ul>
 *   <li>A registration is a {@link PhantomReference} kept in a slot of a table that belongs to the
 *       registering platform thread. The slot keeps it reachable, so the garbage collector enqueues
 *       it once its referent is unreachable, and the {@code dlpack4j-cleaner} daemon thread takes
 *       it from the queue.</li>
 *   <li>Taking an entry out of its slot (a compare-and-set from the entry to null) is what gives
 *       the right to run the action: {@code clean()}, on any thread, and the daemon both try, one
 *       wins, and the action runs exactly once. An entry out of its slot is cleared, so the
 *       collector never enqueues it; it lives on only as long as whoever holds its
 *       {@code Cleanable}.</li>
 *   <li>Only the owning thread reuses slots: its own {@code clean()}s put them on a free stack;
 *       slots that other threads or the daemon emptied are found by a scan when the stack runs out,
 *       before the table grows. A table shrinks back to one chunk when its owner empties it, and
 *       drops wholly empty chunks in a scan that finds most of it empty.</li>
 *   <li>A table whose thread has ended keeps working (its entries are still cleaned and released)
 *       and is dropped by the daemon, which looks about once a second, when its slots are all
 *       empty.</li>
 *   <li>Virtual threads register with a plain {@code Cleaner}: a table per virtual thread would
 *       cost more than it saves.</li>
 * </ul>
 */
public final class SafetyNet {
    /** Slots per chunk; a table grows and shrinks by whole chunks and never moves an entry. */
    static final int CHUNK = 256;
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Object[].class);
    private static final ReferenceQueue<Object> QUEUE = new ReferenceQueue<>();
    /**
     * Every table whose entries may still be registered, by owner: live threads' and ended threads'
     * not yet empty. Found again by a thread whose thread-locals were wiped (an idle common-pool
     * worker's are), so that such a thread never gets a second table.
     */
    private static final ConcurrentHashMap<Thread, Table> TABLES = new ConcurrentHashMap<>();
    private static final ThreadLocal<Table> TABLE = ThreadLocal.withInitial(
            () -> TABLES.computeIfAbsent(Thread.currentThread(), Table::new));
    /**
     * The table of a thread that registers often, found by comparing its (final) owner with the
     * current thread instead of a {@code ThreadLocal} lookup, which costs as much as the rest of a
     * registration. Read and written without synchronisation: a thread only ever uses the table it
     * owns, and one whose owner is not the current thread is passed over. A thread takes the place
     * after {@link #TAKE_OVER} lookups of its own, so that threads registering in turn write it
     * once per so many registrations, not on every one.
     */
    private static Table frequent;
    private static final int TAKE_OVER = 64;
    private static final long SWEEP_NANOS = 1_000_000_000L;

    static {
        // Nothing of the thread that happens to load this class: no inherited thread-locals, no
        // context class loader to pin.
        Thread daemon = Thread.ofPlatform().daemon().name("dlpack4j-cleaner").inheritInheritableThreadLocals(false)
                .unstarted(SafetyNet::cleanForever);
        daemon.setContextClassLoader(null);
        daemon.start();
    }

    private SafetyNet() {}

    /**
     * Runs {@code action} once {@code referent} is unreachable, or when the result's
     * {@code clean()} is called first; either way exactly once.
     *
     * @param referent the object whose unreachability triggers the action; the action must not
     *                 reach it, or it never becomes unreachable
     * @param action   the release; if the daemon runs it and it throws, the exception is dropped
     * @return the registration: {@code clean()} unregisters and runs the action (at most once)
     */
    public static Cleaner.Cleanable register(Object referent, Runnable action) {
        Objects.requireNonNull(referent, "referent");
        Objects.requireNonNull(action, "action");
        Thread me = Thread.currentThread();
        if (me.isVirtual()) {
            return VirtualThreads.CLEANER.register(referent, action);
        }
        Table t = frequent;
        if (t == null || t.owner != me) {
            t = TABLE.get();
            if (++t.lookups == TAKE_OVER) {
                t.lookups = 0;
                frequent = t;
            }
        }
        return t.register(referent, action);
    }

    /** The cleaner of virtual threads' registrations, and its thread, made on first use. */
    private static final class VirtualThreads {
        static final Cleaner CLEANER = Cleaner.create();
    }

    /** One registration: a phantom reference to the referent, kept reachable by its slot. */
    private static final class Entry extends PhantomReference<Object> implements Cleaner.Cleanable {
        private final Runnable action;
        private final Table table;
        private final Object[] chunk;
        private final int index;
        private final int slot;

        Entry(Object referent, Runnable action, Table table, Object[] chunk, int slot) {
            super(referent, QUEUE);
            this.action = action;
            this.table = table;
            this.chunk = chunk;
            this.index = slot % CHUNK;
            this.slot = slot;
        }

        @Override
        public void clean() {
            if (take()) {
                action.run();
            }
        }

        /** Takes this entry out of its slot; true for the one caller that did, who runs the action. */
        private boolean take() {
            if (!SLOT.compareAndSet(chunk, index, (Object) this, (Object) null)) {
                return false;
            }
            if (Thread.currentThread() == table.owner) {
                table.freed(slot);
            }
            return true;
        }

        /** The daemon's part: the referent is unreachable, so no {@code clean()} can come any more. */
        void cleanUnreachable() {
            if (take()) {
                try {
                    action.run();
                } catch (Throwable ignored) {
                    // As Cleaner does: nothing to report to, and the daemon must go on.
                }
            }
        }
    }

    /**
     * A platform thread's slots. The owner alone registers, keeps the free stack and grows or
     * shrinks the table; other threads only take entries out of slots, by compare-and-set. A slot
     * emptied by another thread is free, but not on the stack until the owner's next scan.
     */
    private static final class Table {
        final Thread owner;
        /** The owner's {@code ThreadLocal} lookups since it last took {@link #frequent}. */
        int lookups;
        /** chunks[0 .. count); every slot of them is an Entry or null (free). */
        private Object[][] chunks = new Object[1][];
        private int count;
        /** Free slot numbers (chunk * CHUNK + index), taken from the top. */
        private int[] free = new int[0];
        private int top;

        Table(Thread owner) {
            this.owner = owner;
        }

        Entry register(Object referent, Runnable action) {
            if (top == 0) {
                refill();
            }
            int slot = free[--top];
            Object[] chunk = chunks[slot / CHUNK];
            Entry e = new Entry(referent, action, this, chunk, slot);
            SLOT.setRelease(chunk, slot % CHUNK, (Object) e);
            return e;
        }

        /**
         * The owner emptied a slot: reusable at once. The stack has room for every slot, and holds
         * this one at most once: it was not empty at the last scan, and only its entry's taker frees it.
         * Its chunk is still in the table: shrinking drops only chunks without entries.
         */
        void freed(int slot) {
            free[top++] = slot;
            if (top == count * CHUNK && count > 1) {
                shrinkToOneChunk(); // every slot is free (none is twice on the stack)
            }
        }

        /**
         * After a burst of live registrations, all cleaned: back to one chunk. It runs between
         * taking an entry and running its action, so nothing here may throw: a smaller stack is
         * allocated first, and only if it can be.
         */
        private void shrinkToOneChunk() {
            int[] smaller;
            try {
                smaller = new int[CHUNK];
            } catch (OutOfMemoryError e) {
                smaller = free; // large enough; the next refill trims it
            }
            Arrays.fill(chunks, 1, count, null);
            count = 1;
            free = smaller;
            for (top = 0; top < CHUNK; top++) {
                free[top] = CHUNK - 1 - top;
            }
        }

        /**
         * The stack is empty: collects every empty slot (freed by other threads, or by no one since
         * the last scan), then drops trailing chunks that are wholly empty while at least half the
         * rest stays free, or doubles the table when less than half of it is free. Scans therefore
         * happen at most once per half a table's worth of registrations.
         */
        private void refill() {
            int[] emptyIn = new int[count];
            int empty = 0;
            for (int c = 0; c < count; c++) {
                Object[] chunk = chunks[c];
                for (int i = 0; i < CHUNK; i++) {
                    if (SLOT.getAcquire(chunk, i) == null) {
                        emptyIn[c]++;
                    }
                }
                empty += emptyIn[c];
            }
            while (count > 1 && emptyIn[count - 1] == CHUNK && 2 * (empty - CHUNK) >= (count - 1) * CHUNK) {
                empty -= CHUNK;
                chunks[--count] = null;
            }
            int keep = count;
            int target = 2 * empty < count * CHUNK || count == 0 ? Math.max(1, count * 2) : count;
            // All allocated before anything changes: an OutOfMemoryError leaves the table as it was.
            Object[][] table = target > chunks.length ? Arrays.copyOf(chunks, target) : chunks;
            Object[][] added = new Object[target - count][];
            for (int i = 0; i < added.length; i++) {
                added[i] = new Object[CHUNK];
            }
            int[] stack = free.length < target * CHUNK || free.length > 4 * target * CHUNK ? new int[target * CHUNK] : free;
            System.arraycopy(added, 0, table, count, added.length);
            chunks = table;
            count = target;
            free = stack;
            // Highest first on the stack's bottom, so the lowest slots are used first.
            top = 0;
            for (int c = count - 1; c >= 0; c--) {
                Object[] chunk = chunks[c];
                for (int i = CHUNK - 1; i >= 0; i--) {
                    if (c >= keep || SLOT.getAcquire(chunk, i) == null) {
                        free[top++] = c * CHUNK + i;
                    }
                }
            }
        }

        /** For the daemon, once the owner ended (which happens-before this): whether no slot holds an entry. */
        boolean isEmpty() {
            for (int c = 0; c < count; c++) {
                for (int i = 0; i < CHUNK; i++) {
                    if (SLOT.getAcquire(chunks[c], i) != null) {
                        return false;
                    }
                }
            }
            return true;
        }

        /** For tests, on the owner: slots in the table. */
        int capacity() {
            return count * CHUNK;
        }
    }

    private static void cleanForever() {
        long lastSweep = System.nanoTime();
        while (true) {
            try {
                Reference<?> r = QUEUE.remove(SWEEP_NANOS / 1_000_000);
                if (r instanceof Entry e) {
                    e.cleanUnreachable();
                }
                if (System.nanoTime() - lastSweep >= SWEEP_NANOS) {
                    lastSweep = System.nanoTime();
                    TABLES.values().removeIf(t -> !t.owner.isAlive() && t.isEmpty());
                    Table f = frequent;
                    if (f != null && !f.owner.isAlive()) {
                        frequent = null; // nor keep an ended thread reachable (a lost race costs a lookup)
                    }
                }
            } catch (Throwable ignored) {
                // Interrupts and anything else: the daemon outlives them.
            }
        }
    }

    /** For tests: tables still kept (live threads' and ended threads' with entries). */
    static int tables() {
        return TABLES.size();
    }

    /** For tests: whether {@code thread}'s table is still kept. */
    static boolean hasTable(Thread thread) {
        return TABLES.containsKey(thread);
    }

    /** For tests: the calling platform thread's table size, in slots. */
    static int capacityOfThisThread() {
        return TABLE.get().capacity();
    }
}
