package io.github.dlpack4j.python.interpreter;

import java.lang.foreign.MemorySegment;

/** Reference counts of Python objects passed as raw {@code PyObject*}; every method needs the GIL. */
public final class Refs {
    private Refs() {}

    /**
     * {@code Py_IncRef(o)}: one more reference, which the caller owns.
     *
     * @param o a live object
     */
    public static void incRef(MemorySegment o) {
        try {
            CApi.Py_IncRef.invokeExact(o);
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }

    /**
     * {@code Py_DecRef(o)}: drops a reference the caller owns.
     *
     * @param o a live object
     */
    public static void decRef(MemorySegment o) {
        try {
            CApi.Py_DecRef.invokeExact(o);
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }
}
