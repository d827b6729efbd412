package io.github.dlpack4j.python.interpreter;

import java.lang.foreign.MemorySegment;

/**
 * What dlpack4j knows of CPython's memory: the offsets of the C structs it writes or reads (the
 * object header, {@code PyMethodDef}, {@code PyType_Slot}, {@code PyType_Spec}), the constants of
 * {@code Python.h} that go into them, and the process-wide singletons ({@code None}, {@code True},
 * {@code False}, the builtin types) found by their symbols. All are those of the stable ABI of
 * CPython's GIL builds from 3.10 on; {@code AbiMatchesTheCHeaderTest} checks each offset and
 * constant against the headers with gcc, and {@link #checkObjectHeader()} checks the header of the
 * running interpreter at start-up.
 *
 * <p>The singletons are read when this class is initialised, which must come after libpython's
 * symbols are bound ({@link NativeLibrary#bindPython}); the offsets and constants are compile-time
 * constants, usable before.
 */
public final class CpythonLayout {
    private CpythonLayout() {}

    // ------------------------------------------------------------------ the object header

    /** {@code ob_type}: the second word of every object header ({@code ob_refcnt} is the first). */
    public static final long OB_TYPE = 8;

    // ------------------------------------------------------------------ PyMethodDef

    /** {@code struct PyMethodDef { const char* ml_name; PyCFunction ml_meth; int ml_flags; const char* ml_doc; }} */
    public static final long METHOD_DEF_SIZE = 32;
    public static final long ML_NAME = 0;
    public static final long ML_METH = 8;
    public static final long ML_FLAGS = 16;
    public static final long ML_DOC = 24;
    /** {@code ml_flags}: a {@code (self, args)} function. */
    public static final int METH_VARARGS = 0x0001;
    /** {@code ml_flags}: with keyword arguments (with {@link #METH_FASTCALL}: a {@code kwnames} tuple). */
    public static final int METH_KEYWORDS = 0x0002;
    /** {@code ml_flags}: a {@code (self, unused)} function. */
    public static final int METH_NOARGS = 0x0004;
    /** {@code ml_flags}: a {@code (self, args, nargs)} function over a C array of arguments. */
    public static final int METH_FASTCALL = 0x0080;

    // ------------------------------------------------------------------ PyType_Slot and PyType_Spec

    /** {@code struct PyType_Slot { int slot; void* pfunc; }} */
    public static final long SLOT_SIZE = 16;
    public static final long SLOT_PFUNC = 8;
    /** {@code struct PyType_Spec { const char* name; int basicsize; int itemsize; unsigned int flags; PyType_Slot* slots; }} */
    public static final long SPEC_SIZE = 32;
    public static final long SPEC_NAME = 0;
    public static final long SPEC_BASICSIZE = 8;
    public static final long SPEC_ITEMSIZE = 12;
    public static final long SPEC_FLAGS = 16;
    public static final long SPEC_SLOTS = 24;
    /** Slot ids of {@code typeslots.h}. */
    public static final int Py_tp_doc = 56;
    public static final int Py_tp_methods = 64;
    public static final int Py_tp_repr = 66;
    public static final int Py_tp_finalize = 80;
    /** {@code tp_flags}: no {@code tp_new}, so Python code cannot make instances. */
    public static final int Py_TPFLAGS_DISALLOW_INSTANTIATION = 1 << 7;

    // ------------------------------------------------------------------ singletons

    /** {@code Py_None}. */
    public static final MemorySegment NONE = CApi.symbol("_Py_NoneStruct");
    /** {@code Py_True}. */
    public static final MemorySegment TRUE = CApi.symbol("_Py_TrueStruct");
    /** {@code Py_False}. */
    public static final MemorySegment FALSE = CApi.symbol("_Py_FalseStruct");
    public static final MemorySegment LONG_TYPE = CApi.symbol("PyLong_Type");
    public static final MemorySegment FLOAT_TYPE = CApi.symbol("PyFloat_Type");
    public static final MemorySegment UNICODE_TYPE = CApi.symbol("PyUnicode_Type");
    public static final MemorySegment BYTES_TYPE = CApi.symbol("PyBytes_Type");
    public static final MemorySegment LIST_TYPE = CApi.symbol("PyList_Type");
    public static final MemorySegment TUPLE_TYPE = CApi.symbol("PyTuple_Type");
    public static final MemorySegment DICT_TYPE = CApi.symbol("PyDict_Type");
    public static final MemorySegment CAPSULE_TYPE = CApi.symbol("PyCapsule_Type");
    private static final MemorySegment NONE_TYPE = CApi.symbol("_PyNone_Type");

    /**
     * The address of {@code Py_TYPE(o)}, read from the object header instead of asked for with a
     * downcall pair ({@code PyObject_Type} and a decref). {@code o} must be a live object (the caller
     * holds the GIL and a reference).
     */
    public static long typeOf(MemorySegment o) {
        return RawMemory.word(o.address() + OB_TYPE);
    }

    /**
     * Refuses an interpreter whose objects do not start with {@code ob_refcnt, ob_type} (a
     * free-threaded build), by looking at {@code None}: {@link FreeThreadedRefusal}.
     */
    static void checkObjectHeader() {
        if (RawMemory.word(NONE.address() + OB_TYPE) != NONE_TYPE.address()) {
            throw FreeThreadedRefusal.ofRunningInterpreter();
        }
    }
}
