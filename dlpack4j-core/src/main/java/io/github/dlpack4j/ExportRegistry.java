package io.github.dlpack4j;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Live exports by slot number: the number travels in {@code manager_ctx}, so the deleter finds its
 * record without hashing or boxing. Slots are recycled through a lock-free free list (a Treiber
 * stack whose head carries a tag against ABA); chunks of slots are added under a lock, never moved.
 *
 * @param <T> the record type
 */
final class ExportRegistry<T> {
    private static final int CHUNK_BITS = 12;
    private static final int CHUNK = 1 << CHUNK_BITS;
    private static final int MAX_CHUNKS = 1 << 16;

    @SuppressWarnings("unchecked")
    private final AtomicReferenceArray<T>[] records = new AtomicReferenceArray[MAX_CHUNKS];
    /** Next free slot + 1 for each free slot; 0 ends the list. */
    private final int[][] next = new int[MAX_CHUNKS][];
    /** (tag << 32) | (slot + 1) of the first free slot; slot + 1 == 0 means empty. */
    private final AtomicLong freeHead = new AtomicLong();
    private volatile int chunks;

    /** Stores {@code record} and returns its slot. */
    int add(T record) {
        while (true) {
            long head = freeHead.get();
            int slotPlusOne = (int) head;
            if (slotPlusOne == 0) {
                grow(head);
                continue;
            }
            int slot = slotPlusOne - 1;
            long newHead = ((head >>> 32) + 1) << 32 | (next[slot >>> CHUNK_BITS][slot & (CHUNK - 1)] & 0xFFFF_FFFFL);
            if (freeHead.compareAndSet(head, newHead)) {
                records[slot >>> CHUNK_BITS].set(slot & (CHUNK - 1), record);
                return slot;
            }
        }
    }

    /** The record in {@code slot}, or null if the slot is not a live one. */
    T get(long slot) {
        if (slot < 0 || slot >= (long) chunks << CHUNK_BITS) {
            return null;
        }
        return records[(int) (slot >>> CHUNK_BITS)].get((int) slot & (CHUNK - 1));
    }

    /** Removes the record in {@code slot} if it is {@code expected}; returns whether it did. */
    boolean remove(int slot, T expected) {
        if (!records[slot >>> CHUNK_BITS].compareAndSet(slot & (CHUNK - 1), expected, null)) {
            return false;
        }
        while (true) {
            long head = freeHead.get();
            next[slot >>> CHUNK_BITS][slot & (CHUNK - 1)] = (int) head;
            long newHead = ((head >>> 32) + 1) << 32 | ((slot + 1) & 0xFFFF_FFFFL);
            if (freeHead.compareAndSet(head, newHead)) {
                return true;
            }
        }
    }

    /** Calls {@code action} with the slot and record of every record live at the time (a racing add or remove may or may not be seen). */
    void forEach(java.util.function.ObjIntConsumer<T> action) {
        int c = chunks;
        for (int i = 0; i < c; i++) {
            AtomicReferenceArray<T> chunk = records[i];
            for (int j = 0; j < CHUNK; j++) {
                T r = chunk.get(j);
                if (r != null) {
                    action.accept(r, (i << CHUNK_BITS) | j);
                }
            }
        }
    }

    private synchronized void grow(long seenHead) {
        if (freeHead.get() != seenHead || (int) seenHead != 0) {
            return; // someone freed or grew meanwhile
        }
        int c = chunks;
        if (c == MAX_CHUNKS) {
            throw new IllegalStateException("more than " + ((long) MAX_CHUNKS << CHUNK_BITS) + " live DLPack exports");
        }
        records[c] = new AtomicReferenceArray<>(CHUNK);
        int[] links = new int[CHUNK];
        int base = c << CHUNK_BITS;
        for (int i = 0; i < CHUNK - 1; i++) {
            links[i] = base + i + 2; // slot base+i links to slot base+i+1 (stored + 1)
        }
        next[c] = links;
        chunks = c + 1;
        // Push the whole chunk: its last slot links to whatever is free now.
        while (true) {
            long head = freeHead.get();
            links[CHUNK - 1] = (int) head;
            if (freeHead.compareAndSet(head, ((head >>> 32) + 1) << 32 | (base + 1))) {
                return;
            }
        }
    }
}
