package io.github.dlpack4j.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.apache.arrow.memory.ArrowBuf;

/**
 * Null counts over a range of an Arrow validity bitmap (bit i, least significant first within each
 * byte, is 1 when value i is set). Arrow Java keeps no null count, so the bitmap is read: 64 values
 * per word, with an early exit to an exact count only when a word is not all ones.
 */
final class Validity {
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * All of the address space as one segment: slicing it costs a bounds check, where
     * {@code MemorySegment.reinterpret} costs a caller check per call.
     */
    static final MemorySegment EVERYTHING = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    /**
     * The null values among {@code [from, to)}.
     *
     * @param count the number of nulls
     * @param first the index of the first null, -1 if none
     */
    record Nulls(long count, long first) {
        static final Nulls NONE = new Nulls(0, -1);
    }

    private Validity() {}

    /**
     * The nulls of values {@code [from, to)} in {@code bitmap}.
     *
     * @throws IllegalArgumentException if the bitmap is shorter than {@code to} bits
     */
    static Nulls nulls(ArrowBuf bitmap, long from, long to, String vector) {
        if (from == to) {
            return Nulls.NONE;
        }
        if (bitmap.capacity() * 8 < to) {
            throw new IllegalArgumentException("the validity buffer of '" + vector + "' covers " + bitmap.capacity() * 8
                    + " values, fewer than its " + to);
        }
        MemorySegment bits = EVERYTHING.asSlice(bitmap.memoryAddress(), bitmap.capacity());
        long count = 0;
        long first = -1;
        long i = from;
        for (; i < to && (i & 63) != 0; i++) {
            if (!isSet(bits, i)) {
                count++;
                first = first < 0 ? i : first;
            }
        }
        for (; i + 64 <= to; i += 64) {
            long w = bits.get(WORD, i >>> 3);
            if (w != -1L) {
                count += Long.bitCount(~w);
                first = first < 0 ? i + Long.numberOfTrailingZeros(~w) : first;
            }
        }
        for (; i < to; i++) {
            if (!isSet(bits, i)) {
                count++;
                first = first < 0 ? i : first;
            }
        }
        return count == 0 ? Nulls.NONE : new Nulls(count, first);
    }

    private static boolean isSet(MemorySegment bits, long i) {
        return (bits.get(ValueLayout.JAVA_BYTE, i >>> 3) & (1 << (i & 7))) != 0;
    }
}
