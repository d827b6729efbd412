package io.github.dlpack4j.python.protocol;

import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.PyErrors;
import io.github.dlpack4j.python.interpreter.RawMemory;
import io.github.dlpack4j.python.interpreter.Refs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * The {@code pointer} and {@code name} fields of CPython's capsule object, read and written in
 * place on the import route, where {@code PyCapsule_IsValid}, {@code PyCapsule_GetPointer} and
 * {@code PyCapsule_SetName} would be three downcalls per import (about 4 ns each here, a tenth of
 * what the import costs beyond Python's own work). The struct ({@code Objects/capsule.c}:
 * {@code PyObject_HEAD}, then {@code pointer}, {@code name}, {@code context}, {@code destructor})
 * is CPython's, not API, so {@link #USABLE} is decided once per process on a capsule made for the
 * purpose: the fields must read as the C API made them, and a name written here must be the one the
 * C API reads back. Where anything differs, imports use the C API as before. Needs the GIL.
 */
final class CapsuleFields {
    /** {@code capsule->pointer}: after the object header (two words in GIL builds, the only ones dlpack4j runs on). */
    static final long POINTER = 16;
    /** {@code capsule->name}. */
    static final long NAME = 24;

    private static final MemorySegment MEMORY = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    /** Whether the fields are where {@link #POINTER} and {@link #NAME} say, checked on this interpreter. */
    static final boolean USABLE = probe();

    private CapsuleFields() {}

    /** {@code capsule->pointer} of a capsule (the caller checked the type). */
    static long pointer(long capsule) {
        return RawMemory.word(capsule + POINTER);
    }

    /** {@code capsule->name} of a capsule. */
    static long name(long capsule) {
        return RawMemory.word(capsule + NAME);
    }

    /** {@code PyCapsule_SetName(capsule, name)} of a capsule whose pointer is not NULL (so that it cannot fail). */
    static void setName(long capsule, MemorySegment name) {
        MEMORY.set(ValueLayout.JAVA_LONG_UNALIGNED, capsule + NAME, name.address());
    }

    private static boolean probe() {
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            return false; // CName compares little-endian words
        }
        try {
            MemorySegment pointer = Arena.global().allocate(8);
            MemorySegment c = (MemorySegment) CApi.PyCapsule_New.invokeExact(pointer, Capsules.VERSIONED, MemorySegment.NULL);
            if (c.address() == 0) {
                PyErrors.fetchError(); // cleared: imports use the C API
                return false;
            }
            try {
                long a = c.address();
                if (pointer(a) != pointer.address() || name(a) != Capsules.VERSIONED.address()
                        || !CName.VERSIONED.matches(name(a))) {
                    return false;
                }
                setName(a, Capsules.USED_VERSIONED);
                MemorySegment read = (MemorySegment) CApi.PyCapsule_GetName.invokeExact(c);
                MemorySegment got = (MemorySegment) CApi.PyCapsule_GetPointer.invokeExact(c, Capsules.USED_VERSIONED);
                return read.address() == Capsules.USED_VERSIONED.address() && got.address() == pointer.address()
                        && !CName.VERSIONED.matches(name(a)) && !CName.LEGACY.matches(name(a));
            } finally {
                Refs.decRef(c); // no destructor
            }
        } catch (Throwable t) {
            return false;
        }
    }

    /**
     * A C string to compare capsule names with, as {@code strcmp} does, in aligned 8-byte words: an
     * aligned word that holds a byte of the string lies in the same page as that byte, so no read
     * can fault where {@code strcmp} would not, and the comparison stops at the first word that
     * differs, before any word past the end of the producer's string (a word that matches holds no
     * terminating NUL but the expected one, so the string goes on into the next word).
     */
    static final class CName {
        static final CName VERSIONED = new CName("dltensor_versioned");
        static final CName LEGACY = new CName("dltensor");

        /** Per alignment of the string's address (0 to 7): the expected bytes and their mask, by word. */
        private final long[][] values = new long[8][];
        private final long[][] masks = new long[8][];

        private CName(String s) {
            byte[] b = (s + "\0").getBytes(StandardCharsets.US_ASCII);
            for (int shift = 0; shift < 8; shift++) {
                int words = (shift + b.length + 7) / 8;
                long[] v = new long[words];
                long[] m = new long[words];
                for (int k = 0; k < b.length; k++) {
                    int at = shift + k;
                    v[at >>> 3] |= (b[k] & 0xFFL) << (8 * (at & 7));
                    m[at >>> 3] |= 0xFFL << (8 * (at & 7));
                }
                values[shift] = v;
                masks[shift] = m;
            }
        }

        /** Whether the C string at {@code address} is this one; a NULL name is no name of ours. */
        boolean matches(long address) {
            if (address == 0) {
                return false;
            }
            int shift = (int) (address & 7);
            long base = address - shift;
            long[] v = values[shift];
            long[] m = masks[shift];
            for (int w = 0; w < v.length; w++) {
                if ((RawMemory.word(base + 8L * w) & m[w]) != v[w]) {
                    return false;
                }
            }
            return true;
        }
    }
}
