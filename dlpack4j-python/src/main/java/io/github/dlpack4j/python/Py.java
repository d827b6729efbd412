package io.github.dlpack4j.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;

/**
 * Small helpers over {@link CApi} for code that holds the GIL: references, strings, and turning
 * the pending Python error into a {@link PythonException}.
 */
final class Py {
    private Py() {}

    /** Rethrows {@code t} unchecked (what a downcall's {@code invokeExact} declares it may throw). */
    static RuntimeException unchecked(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }

    static void incRef(MemorySegment o) {
        try {
            CApi.Py_IncRef.invokeExact(o);
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    static void decRef(MemorySegment o) {
        try {
            CApi.Py_DecRef.invokeExact(o);
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    /** {@code o} if it is not NULL; otherwise throws the pending Python error. */
    static MemorySegment check(MemorySegment o) {
        if (o.address() == 0) {
            throw fetchError();
        }
        return o;
    }

    /** Throws the pending Python error if {@code status} is -1. */
    static int check(int status) {
        if (status == -1) {
            throw fetchError();
        }
        return status;
    }

    /**
     * All of the address space as one segment, made once: slicing it costs a bounds check, where
     * {@code MemorySegment.reinterpret} costs a caller and native-access check on every call.
     */
    private static final MemorySegment MEMORY = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    /** The {@code size} bytes at {@code address}, like {@code ofAddress(address).reinterpret(size)}. */
    static MemorySegment at(MemorySegment address, long size) {
        return MEMORY.asSlice(address.address(), size);
    }

    /** The pointer-sized word at {@code address} (a {@code PyObject*} in an argument array). */
    static long word(long address) {
        return MEMORY.get(ValueLayout.JAVA_LONG_UNALIGNED, address);
    }

    /**
     * The address of {@code Py_TYPE(o)}, read from the object instead of asked for with a downcall
     * pair ({@code PyObject_Type} and a decref): {@code ob_type} is the second word of every object
     * header in the stable ABI of CPython's GIL builds, which {@link #checkObjectLayout} confirms at
     * start-up. {@code o} must be a live object (the caller holds the GIL and a reference).
     */
    static long typeOf(MemorySegment o) {
        return word(o.address() + OB_TYPE);
    }

    private static final long OB_TYPE = 8;

    /**
     * Refuses an interpreter whose objects do not start with {@code ob_refcnt, ob_type} (a
     * free-threaded build, which also has no GIL for dlpack4j to hold), by looking at {@code None}.
     */
    static void checkObjectLayout() {
        long none = CApi.symbol("_Py_NoneStruct").address();
        long noneType = CApi.symbol("_PyNone_Type").address();
        if (word(none + OB_TYPE) != noneType) {
            throw new IllegalStateException("this Python's objects do not have the object header of CPython's "
                    + "GIL builds (a free-threaded build?); dlpack4j needs a Python with the GIL");
        }
    }

    /** {@code int(o)} through {@code __index__}; Python's own TypeError or OverflowError if it has none or is too big. */
    static long asLong(MemorySegment o) throws Throwable {
        long v = (long) CApi.PyLong_AsLongLong.invokeExact(o);
        if (v == -1 && ((MemorySegment) CApi.PyErr_Occurred.invokeExact()).address() != 0) {
            throw fetchError();
        }
        return v;
    }

    /** Per thread: room for a pending exception's (type, value, traceback) while {@link #keepingError} runs. */
    private static final ThreadLocal<MemorySegment> SET_ASIDE = ThreadLocal.withInitial(
            () -> Arena.ofAuto().allocate(ADDRESS, 3));

    /**
     * Runs {@code body} with the exception being raised, if any, set aside and put back after, so that
     * code run from a destructor or finalizer neither sees it nor loses it. Re-entrant: the three
     * references go to locals at once, since {@code body} may come back here on the same thread.
     * Needs the GIL.
     */
    static void keepingError(Gil.Body<?> body) throws Throwable {
        MemorySegment slots = SET_ASIDE.get();
        CApi.PyErr_Fetch.invokeExact(slots, slots.asSlice(8), slots.asSlice(16));
        MemorySegment type = slots.get(ADDRESS, 0);
        MemorySegment value = slots.get(ADDRESS, 8);
        MemorySegment traceback = slots.get(ADDRESS, 16);
        try {
            body.run();
        } finally {
            CApi.PyErr_Restore.invokeExact(type, value, traceback);
        }
    }

    /** Throws the pending Python error if {@code size} is -1. */
    static long checkSize(long size) {
        if (size == -1) {
            throw fetchError();
        }
        return size;
    }

    /** A new {@code str}. */
    static MemorySegment newString(String s) {
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(Math.max(utf8.length, 1));
            MemorySegment.copy(utf8, 0, buf, ValueLayout.JAVA_BYTE, 0, utf8.length);
            return check((MemorySegment) CApi.PyUnicode_FromStringAndSize.invokeExact(buf, (long) utf8.length));
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    /** The Java string of a Python {@code str}. */
    static String toJavaString(MemorySegment str) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment size = arena.allocate(JAVA_LONG);
            MemorySegment chars = check((MemorySegment) CApi.PyUnicode_AsUTF8AndSize.invokeExact(str, size));
            long n = size.get(JAVA_LONG, 0);
            return new String(chars.reinterpret(n).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    /** {@code str(o)} as a Java string. */
    static String str(MemorySegment o) {
        try {
            MemorySegment s = check((MemorySegment) CApi.PyObject_Str.invokeExact(o));
            try {
                return toJavaString(s);
            } finally {
                decRef(s);
            }
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    /** {@code getattr(o, name)}, a new reference. */
    static MemorySegment getAttr(MemorySegment o, String name) {
        try (Arena arena = Arena.ofConfined()) {
            return check((MemorySegment) CApi.PyObject_GetAttrString.invokeExact(o, arena.allocateFrom(name)));
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    /** Imports {@code name}, a new reference. */
    static MemorySegment importModule(String name) {
        try (Arena arena = Arena.ofConfined()) {
            return check((MemorySegment) CApi.PyImport_ImportModule.invokeExact(arena.allocateFrom(name)));
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    /**
     * Takes the pending Python error (there must be one) and returns it as a {@link PythonException}
     * with type name, message and formatted traceback. Never throws itself.
     */
    static PythonException fetchError() {
        MemorySegment type;
        MemorySegment value;
        MemorySegment tb;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment slots = arena.allocate(ADDRESS, 3);
            CApi.PyErr_Fetch.invokeExact(slots, slots.asSlice(8), slots.asSlice(16));
            if (slots.get(ADDRESS, 0).address() == 0) {
                return new PythonException("SystemError", "a C API call failed without setting a Python error", "", null);
            }
            CApi.PyErr_NormalizeException.invokeExact(slots, slots.asSlice(8), slots.asSlice(16));
            type = slots.get(ADDRESS, 0);
            value = slots.get(ADDRESS, 8);
            tb = slots.get(ADDRESS, 16);
            if (tb.address() != 0 && value.address() != 0) {
                int ignored = (int) CApi.PyException_SetTraceback.invokeExact(value, tb);
            }
        } catch (Throwable t) {
            return new PythonException("SystemError", "could not fetch the Python error: " + t, "", null);
        }
        String typeName = describeType(type);
        String message = safeStr(value);
        String traceback = formatTraceback(type, value, tb);
        PyObject[] original = {PyObject.steal(type), value.address() == 0 ? null : PyObject.steal(value),
                tb.address() == 0 ? null : PyObject.steal(tb)};
        return new PythonException(typeName, message, traceback, original);
    }

    private static String describeType(MemorySegment type) {
        try {
            String module = attrString(type, "__module__");
            String name = attrString(type, "__qualname__");
            return module == null || module.equals("builtins") ? name : module + "." + name;
        } catch (RuntimeException e) {
            clearError();
            return "<unknown type>";
        }
    }

    private static String attrString(MemorySegment o, String attr) {
        MemorySegment a = getAttr(o, attr);
        try {
            return toJavaString(a);
        } finally {
            decRef(a);
        }
    }

    private static String safeStr(MemorySegment o) {
        if (o.address() == 0) {
            return "";
        }
        try {
            return str(o);
        } catch (RuntimeException e) {
            clearError();
            return "<str() failed>";
        }
    }

    private static String formatTraceback(MemorySegment type, MemorySegment value, MemorySegment tb) {
        if (tb.address() == 0) {
            return "";
        }
        MemorySegment module = MemorySegment.NULL;
        MemorySegment lines = MemorySegment.NULL;
        MemorySegment joined = MemorySegment.NULL;
        try {
            module = importModule("traceback");
            MemorySegment format = getAttr(module, "format_exception");
            MemorySegment args = Convert.tuple(new MemorySegment[] {type, value.address() == 0 ? Convert.none() : value, tb});
            try {
                lines = check((MemorySegment) CApi.PyObject_CallObject.invokeExact(format, args));
            } finally {
                decRef(args);
                decRef(format);
            }
            MemorySegment empty = newString("");
            try {
                MemorySegment join = getAttr(empty, "join");
                MemorySegment joinArgs = Convert.tuple(new MemorySegment[] {lines});
                try {
                    joined = check((MemorySegment) CApi.PyObject_CallObject.invokeExact(join, joinArgs));
                } finally {
                    decRef(joinArgs);
                    decRef(join);
                }
            } finally {
                decRef(empty);
            }
            return toJavaString(joined).stripTrailing();
        } catch (Throwable t) {
            clearError();
            return "<traceback unavailable: " + t.getMessage() + ">";
        } finally {
            for (MemorySegment o : new MemorySegment[] {module, lines, joined}) {
                if (o.address() != 0) {
                    decRef(o);
                }
            }
        }
    }

    static void clearError() {
        try {
            CApi.PyErr_Clear.invokeExact();
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    /**
     * Raises {@code e} in Python (the caller then returns NULL or -1 to Python): the original
     * Python exception for a {@link PythonException} that came from Python, else the Python type it
     * names, else a type chosen from the Java exception's class. Never throws.
     */
    static void raise(Throwable e) {
        try {
            if (e instanceof PythonException pe && pe.original() != null && !pe.original()[0].isClosed()) {
                // The Python exception goes back to Python, and the Java objects let go of it now: left
                // to the Java GC, its traceback would keep every frame's locals alive until then.
                PyObject[] o = pe.original();
                MemorySegment type = o[0].newReference();
                MemorySegment value = o[1] == null ? MemorySegment.NULL : o[1].newReference();
                MemorySegment tb = o[2] == null ? MemorySegment.NULL : o[2].newReference();
                for (PyObject p : o) {
                    if (p != null) {
                        p.close();
                    }
                }
                CApi.PyErr_Restore.invokeExact(type, value, tb);
                return;
            }
            String type = e instanceof PythonException pe ? pe.pythonType() : pythonTypeFor(e);
            String message = e instanceof PythonException pe ? pe.pythonMessage() : e.getClass().getName()
                    + (e.getMessage() == null ? "" : ": " + e.getMessage());
            MemorySegment exceptionType = builtinException(type);
            try (Arena arena = Arena.ofConfined()) {
                CApi.PyErr_SetString.invokeExact(exceptionType, arena.allocateFrom(message));
            }
        } catch (Throwable fatal) {
            try {
                CApi.PyErr_SetString.invokeExact(CApi.pointerVariable("PyExc_RuntimeError"),
                        Arena.global().allocateFrom("Java exception (and another while reporting it)"));
            } catch (Throwable ignored) {
                // Nothing more can be done without letting an exception into C.
            }
        }
    }

    private static String pythonTypeFor(Throwable e) {
        if (e instanceof OutOfMemoryError) {
            return "MemoryError";
        }
        if (e instanceof NullPointerException || e instanceof ClassCastException) {
            return "TypeError";
        }
        if (e instanceof IllegalArgumentException || e instanceof ArithmeticException) {
            return "ValueError";
        }
        if (e instanceof UnsupportedOperationException) {
            return "NotImplementedError";
        }
        if (e instanceof IndexOutOfBoundsException) {
            return "IndexError";
        }
        return "RuntimeError";
    }

    /** The builtin exception class {@code PyExc_<name>}, or RuntimeError if there is none. */
    private static MemorySegment builtinException(String name) {
        return NativeLibrary.python().find("PyExc_" + name).map(p -> p.reinterpret(8).get(ADDRESS, 0))
                .orElseGet(() -> CApi.pointerVariable("PyExc_RuntimeError"));
    }
}
