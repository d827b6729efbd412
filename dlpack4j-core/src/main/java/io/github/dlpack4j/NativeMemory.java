package io.github.dlpack4j;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.atomic.LongAdder;

/**
 * The C heap, through {@code malloc}/{@code free}, with a count of the bytes this library holds.
 *
 * <p>Why not an {@code Arena}: memory here is freed from whatever thread a foreign deleter runs on,
 * so a confined arena cannot own it, and closing a shared arena costs a thread handshake (tens of
 * microseconds) per tensor. Liveness checks are done by {@link MemoryOwner} instead.
 */
final class NativeMemory {
    /** Alignment of tensor data: a cache line, enough for every SIMD load. */
    static final long DATA_ALIGNMENT = 64;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle MALLOC = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("malloc"), FunctionDescriptor.of(ADDRESS, JAVA_LONG));
    private static final MethodHandle ALIGNED_ALLOC = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("aligned_alloc"), FunctionDescriptor.of(ADDRESS, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle FREE = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("free"), FunctionDescriptor.ofVoid(ADDRESS));
    /** Calls a {@code void (*)(void*)} function pointer: the deleters of foreign managed tensors. */
    private static final MethodHandle CALL_VOID_PTR = LINKER.downcallHandle(FunctionDescriptor.ofVoid(ADDRESS));

    private static final LongAdder BYTES_IN_USE = new LongAdder();

    /**
     * All of the address space as one segment, made once: {@link #at} slices it, which costs a bounds
     * check where {@code MemorySegment.reinterpret} costs a caller and native-access check per call.
     */
    private static final MemorySegment EVERYTHING = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    private NativeMemory() {}

    /** The {@code size} bytes at {@code address} (global scope), like {@code ofAddress(address).reinterpret(size)}. */
    static MemorySegment at(long address, long size) {
        return EVERYTHING.asSlice(address, size);
    }

    /** The long at {@code address}, read without making a segment. */
    static long word(long address) {
        return EVERYTHING.get(ValueLayout.JAVA_LONG_UNALIGNED, address);
    }

    /** The int at {@code address}. */
    static int int32(long address) {
        return EVERYTHING.get(ValueLayout.JAVA_INT_UNALIGNED, address);
    }

    /** The unsigned 16-bit value at {@code address}. */
    static int uint16(long address) {
        return EVERYTHING.get(ValueLayout.JAVA_SHORT_UNALIGNED, address) & 0xFFFF;
    }

    /** The unsigned byte at {@code address}. */
    static int uint8(long address) {
        return EVERYTHING.get(ValueLayout.JAVA_BYTE, address) & 0xFF;
    }

    /** {@code n} longs read from {@code address}. */
    static long[] longs(long address, int n) {
        long[] a = new long[n];
        if (n <= 8) {
            // The shape and strides of an import: a bulk copy costs more than a few reads.
            for (int i = 0; i < n; i++) {
                a[i] = EVERYTHING.get(ValueLayout.JAVA_LONG_UNALIGNED, address + 8L * i);
            }
        } else {
            MemorySegment.copy(EVERYTHING, ValueLayout.JAVA_LONG_UNALIGNED, address, a, 0, n);
        }
        return a;
    }

    /** {@code malloc(size)} of at least one byte, as a segment of {@code size} bytes. */
    static MemorySegment malloc(long size) {
        MemorySegment p;
        try {
            p = (MemorySegment) MALLOC.invokeExact(Math.max(size, 1));
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
        return checked(p, size);
    }

    /** Tensor data of {@code size} bytes at {@link #DATA_ALIGNMENT}; freed with {@link #free}. */
    static MemorySegment allocateData(long size) {
        long rounded = Math.addExact(Math.max(size, 1), DATA_ALIGNMENT - 1) & -DATA_ALIGNMENT;
        MemorySegment p;
        try {
            p = (MemorySegment) ALIGNED_ALLOC.invokeExact(DATA_ALIGNMENT, rounded);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
        return checked(p, size);
    }

    private static MemorySegment checked(MemorySegment p, long size) {
        if (p.address() == 0) {
            throw new OutOfMemoryError("native allocation of " + size + " bytes failed");
        }
        BYTES_IN_USE.add(size);
        return at(p.address(), size);
    }

    /** Frees memory from {@link #malloc} or {@link #allocateData}; {@code size} as allocated. */
    static void free(MemorySegment p, long size) {
        try {
            FREE.invokeExact(p);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
        BYTES_IN_USE.add(-size);
    }

    /** Bytes currently allocated by this library. */
    static long bytesInUse() {
        return BYTES_IN_USE.sum();
    }

    /** Calls the C function {@code fn(arg)} of type {@code void (*)(void*)}. */
    static void callVoidFunction(MemorySegment fn, MemorySegment arg) {
        try {
            CALL_VOID_PTR.invokeExact(fn, arg);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }
}
