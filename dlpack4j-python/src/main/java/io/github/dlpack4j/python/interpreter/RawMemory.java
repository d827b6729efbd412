package io.github.dlpack4j.python.interpreter;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Native memory at addresses that C handed over (an object, a struct a callee filled in), read
 * without a {@code reinterpret} per access.
 */
public final class RawMemory {
    private RawMemory() {}

    /**
     * All of the address space as one segment, made once: slicing it costs a bounds check, where
     * {@code MemorySegment.reinterpret} costs a caller and native-access check on every call.
     */
    private static final MemorySegment MEMORY = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    /**
     * {@return the {@code size} bytes at {@code address}, like {@code ofAddress(address).reinterpret(size)}}
     *
     * @param address where the bytes start
     * @param size    how many there are
     */
    public static MemorySegment at(MemorySegment address, long size) {
        return MEMORY.asSlice(address.address(), size);
    }

    /**
     * {@return the pointer-sized word at {@code address}} (a {@code PyObject*} in an argument array,
     * a field of an object)
     *
     * @param address where the word is
     */
    public static long word(long address) {
        return MEMORY.get(ValueLayout.JAVA_LONG_UNALIGNED, address);
    }

    /**
     * Writes the pointer-sized word at {@code address} (a reference count, with the GIL held).
     *
     * @param address where the word is
     * @param value   what to write
     */
    public static void putWord(long address, long value) {
        MEMORY.set(ValueLayout.JAVA_LONG_UNALIGNED, address, value);
    }
}
