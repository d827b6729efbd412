package io.github.dlpack4j.python.interpreter;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonException;

/**
 * Python errors on the Java side: checking what a C API call returned, turning the pending Python
 * error into a {@link PythonException} (type name, message, traceback, and the original exception
 * kept to raise it again), and raising a Java exception in Python at an upcall's boundary. Every
 * method but {@link #unchecked} needs the GIL.
 */
public final class PyErrors {
    private PyErrors() {}

    /** Rethrows {@code t} unchecked (what a downcall's {@code invokeExact} declares it may throw). */
    public static RuntimeException unchecked(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }


    /** {@code o} if it is not NULL; otherwise throws the pending Python error. */
    public static MemorySegment check(MemorySegment o) {
        if (o.address() == 0) {
            throw fetchError();
        }
        return o;
    }

    /** Throws the pending Python error if {@code status} is -1. */
    public static int check(int status) {
        if (status == -1) {
            throw fetchError();
        }
        return status;
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
    public static void keepingError(Gil.Body<?> body) throws Throwable {
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
    public static long checkSize(long size) {
        if (size == -1) {
            throw fetchError();
        }
        return size;
    }

    /**
     * Takes the pending Python error (there must be one) and returns it as a {@link PythonException}
     * with type name, message and formatted traceback. Never throws itself.
     */
    public static PythonException fetchError() {
        MemorySegment type;
        MemorySegment value;
        MemorySegment tb;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment slots = arena.allocate(ADDRESS, 3);
            CApi.PyErr_Fetch.invokeExact(slots, slots.asSlice(8), slots.asSlice(16));
            if (slots.get(ADDRESS, 0).address() == 0) {
                return PyObjects.exception("SystemError", "a C API call failed without setting a Python error", "", null);
            }
            CApi.PyErr_NormalizeException.invokeExact(slots, slots.asSlice(8), slots.asSlice(16));
            type = slots.get(ADDRESS, 0);
            value = slots.get(ADDRESS, 8);
            tb = slots.get(ADDRESS, 16);
            if (tb.address() != 0 && value.address() != 0) {
                int ignored = (int) CApi.PyException_SetTraceback.invokeExact(value, tb);
            }
        } catch (Throwable t) {
            return PyObjects.exception("SystemError", "could not fetch the Python error: " + t, "", null);
        }
        String typeName = describeType(type);
        String message = safeStr(value);
        String traceback = formatTraceback(type, value, tb);
        PyObject[] original = {PyObjects.steal(type), value.address() == 0 ? null : PyObjects.steal(value),
                tb.address() == 0 ? null : PyObjects.steal(tb)};
        return PyObjects.exception(typeName, message, traceback, original);
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
        MemorySegment a = Names.getAttr(o, attr);
        try {
            return Convert.toJavaString(a);
        } finally {
            Refs.decRef(a);
        }
    }

    private static String safeStr(MemorySegment o) {
        if (o.address() == 0) {
            return "";
        }
        try {
            return Convert.str(o);
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
            module = Names.importModule("traceback");
            MemorySegment format = Names.getAttr(module, "format_exception");
            MemorySegment args = Convert.tuple(new MemorySegment[] {type, value.address() == 0 ? CpythonLayout.NONE : value, tb});
            try {
                lines = check((MemorySegment) CApi.PyObject_CallObject.invokeExact(format, args));
            } finally {
                Refs.decRef(args);
                Refs.decRef(format);
            }
            MemorySegment empty = Convert.newString("");
            try {
                MemorySegment join = Names.getAttr(empty, "join");
                MemorySegment joinArgs = Convert.tuple(new MemorySegment[] {lines});
                try {
                    joined = check((MemorySegment) CApi.PyObject_CallObject.invokeExact(join, joinArgs));
                } finally {
                    Refs.decRef(joinArgs);
                    Refs.decRef(join);
                }
            } finally {
                Refs.decRef(empty);
            }
            return Convert.toJavaString(joined).stripTrailing();
        } catch (Throwable t) {
            clearError();
            return "<traceback unavailable: " + t.getMessage() + ">";
        } finally {
            for (MemorySegment o : new MemorySegment[] {module, lines, joined}) {
                if (o.address() != 0) {
                    Refs.decRef(o);
                }
            }
        }
    }

    public static void clearError() {
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
    public static void raise(Throwable e) {
        try {
            PyObject[] o = e instanceof PythonException pe ? PyObjects.original(pe) : null;
            if (o != null && !o[0].isClosed()) {
                // The Python exception goes back to Python, and the Java objects let go of it now: left
                // to the Java GC, its traceback would keep every frame's locals alive until then.
                MemorySegment type = PyObjects.newReference(o[0]);
                MemorySegment value = o[1] == null ? MemorySegment.NULL : PyObjects.newReference(o[1]);
                MemorySegment tb = o[2] == null ? MemorySegment.NULL : PyObjects.newReference(o[2]);
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
