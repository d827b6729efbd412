package io.github.dlpack4j.python.interpreter;

import java.lang.foreign.MemorySegment;

/**
 * Reference counts of Python objects passed as raw {@code PyObject*}; every method needs the GIL.
 *
 * <p>Once the interpreter is known ({@link #countInJava}), counts are changed in Java the way
 * CPython's own {@code Py_INCREF} and {@code Py_DECREF} macros change them, instead of through
 * {@code Py_IncRef}/{@code Py_DecRef} downcalls (a thread-state transition each, about a third of a
 * Python call's own cost): {@code ob_refcnt} is the first word of every object header, and the GIL,
 * which the caller holds, is what guards it for C code too. A decrement that would reach zero calls
 * {@code Py_DecRef}, which frees the object. On CPython 3.12 and later an object whose count, as a
 * 32-bit int, is negative is immortal and left as it is, exactly as the macros of those versions do.
 * Until then (while the interpreter starts), and for a debug build ({@code Py_REF_DEBUG}, whose
 * functions also keep a total), the functions are called.
 */
public final class Refs {
    /** Whether counts are changed in Java; set once, before the interpreter is published. */
    private static boolean inJava;
    /** Whether this CPython has immortal objects (3.12 and later). */
    private static boolean immortals;

    private Refs() {}

    /**
     * Changes counts in Java from now on, for a CPython {@code 3.minor} release build with the GIL.
     * Called once, while the interpreter starts; a thread that reads the old value calls the C
     * functions, which is just as right.
     *
     * @param minor       the interpreter's minor version (3.10 to 3.13 are known)
     * @param debugBuild  whether {@code sys.gettotalrefcount} exists (a {@code Py_REF_DEBUG} build)
     */
    static void countInJava(int minor, boolean debugBuild) {
        if (!debugBuild && minor >= 10 && minor <= 13) {
            immortals = minor >= 12;
            inJava = true;
        }
    }

    /**
     * {@code Py_INCREF(o)}: one more reference, which the caller owns.
     *
     * @param o a live object
     */
    public static void incRef(MemorySegment o) {
        if (inJava) {
            long a = o.address();
            long count = RawMemory.word(a);
            if (!(immortals && (int) count < 0)) {
                RawMemory.putWord(a, count + 1);
            }
            return;
        }
        try {
            CApi.Py_IncRef.invokeExact(o);
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }

    /**
     * {@code Py_DECREF(o)}: drops a reference the caller owns (the last one frees the object, which
     * may run any Python code).
     *
     * @param o a live object
     */
    public static void decRef(MemorySegment o) {
        if (inJava) {
            long a = o.address();
            long count = RawMemory.word(a);
            if (immortals && (int) count < 0) {
                return;
            }
            if (count > 1) {
                RawMemory.putWord(a, count - 1);
                return;
            }
        }
        try {
            CApi.Py_DecRef.invokeExact(o);
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }
}
