package io.github.dlpack4j.python.interpreter;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * The parts of CPython's C API that dlpack4j calls, as downcall handles. Only functions of the
 * stable API are used (no struct field of a Python object is read, but for the header's
 * {@code ob_type}: {@link CpythonLayout#typeOf}, stable as well), so one build of dlpack4j works with every
 * CPython from 3.10 on ({@code scripts/test} runs the {@code any-cpython} tests on each one present).
 * The class is initialised after libpython was found ({@link NativeLibrary#bindPython}), so that its
 * handles are constants the JIT can inline.
 *
 * <p>Every function here except the GIL functions needs the GIL held by the calling thread.
 */
public final class CApi {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LOOKUP = NativeLibrary.python();

    private static MethodHandle fn(String name, FunctionDescriptor d) {
        return LINKER.downcallHandle(LOOKUP.findOrThrow(name), d);
    }

    /**
     * A call without the thread-state transition ({@code Linker.Option.critical}): only for functions
     * that return at once and can never run Python code, and so never call back into Java or wait
     * for anything (the JVM cannot reach a safepoint during the call). Callers must also pass
     * arguments that cannot fail: raising an error allocates the exception, and on CPython 3.9-3.11
     * an allocation can collect garbage, whose finalizers and capsule destructors may be Java upcalls
     * (which abort the JVM from inside a critical call). So capsules are checked first
     * ({@code PyCapsule_IsValid}, which never fails); {@code PyCapsule_New}, which can run out of
     * memory, and the tuple functions, whose arguments come from callers, are not critical.
     */
    private static MethodHandle leaf(String name, FunctionDescriptor d) {
        return LINKER.downcallHandle(LOOKUP.findOrThrow(name), d, Linker.Option.critical(false));
    }

    public static MemorySegment symbol(String name) {
        return LOOKUP.findOrThrow(name);
    }

    /**
     * {@return a function or variable of libpython, or empty if this version has none by that name}
     *
     * @param name the symbol's name
     */
    public static java.util.Optional<MemorySegment> findSymbol(String name) {
        return LOOKUP.find(name);
    }

    /** The object a {@code PyObject*} global variable (such as {@code PyExc_TypeError}) points to. */
    public static MemorySegment pointerVariable(String name) {
        return LOOKUP.findOrThrow(name).reinterpret(ADDRESS.byteSize()).get(ADDRESS, 0);
    }

    private static final FunctionDescriptor P_P = FunctionDescriptor.of(ADDRESS, ADDRESS);
    private static final FunctionDescriptor P_PP = FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS);
    private static final FunctionDescriptor P_PPP = FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS);
    private static final FunctionDescriptor I_P = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    private static final FunctionDescriptor I_PP = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS);
    private static final FunctionDescriptor I_PPP = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
    private static final FunctionDescriptor V_P = FunctionDescriptor.ofVoid(ADDRESS);

    // Life cycle and threads
    public static final MethodHandle Py_InitializeEx = fn("Py_InitializeEx", FunctionDescriptor.ofVoid(JAVA_INT));
    public static final MethodHandle PyGILState_Ensure = fn("PyGILState_Ensure", FunctionDescriptor.of(JAVA_INT));
    public static final MethodHandle PyGILState_Release = fn("PyGILState_Release", FunctionDescriptor.ofVoid(JAVA_INT));
    /** Critical: it reads this thread's state and the runtime's, nothing else. */
    public static final MethodHandle PyGILState_Check = leaf("PyGILState_Check", FunctionDescriptor.of(JAVA_INT));
    /** Critical: it reads this OS thread's thread-state slot, nothing else. */
    public static final MethodHandle PyGILState_GetThisThreadState = leaf("PyGILState_GetThisThreadState", FunctionDescriptor.of(ADDRESS));
    public static final MethodHandle PyEval_SaveThread = fn("PyEval_SaveThread", FunctionDescriptor.of(ADDRESS));
    public static final MethodHandle PyEval_RestoreThread = fn("PyEval_RestoreThread", V_P);

    // References
    public static final MethodHandle Py_IncRef = fn("Py_IncRef", V_P);
    public static final MethodHandle Py_DecRef = fn("Py_DecRef", V_P);

    // Running code and modules
    public static final MethodHandle PyRun_String = fn("PyRun_String",
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS));
    public static final MethodHandle PyImport_AddModule = fn("PyImport_AddModule", P_P);
    public static final MethodHandle PyImport_ImportModule = fn("PyImport_ImportModule", P_P);
    public static final MethodHandle PyModule_GetDict = fn("PyModule_GetDict", P_P);

    // Objects
    public static final MethodHandle PyObject_GetAttr = fn("PyObject_GetAttr", P_PP);
    public static final MethodHandle PyObject_GetAttrString = fn("PyObject_GetAttrString", P_PP);
    public static final MethodHandle PyObject_SetAttrString = fn("PyObject_SetAttrString", I_PPP);
    public static final MethodHandle PyObject_HasAttrString = fn("PyObject_HasAttrString", I_PP);
    public static final MethodHandle PyObject_Call = fn("PyObject_Call", P_PPP);
    public static final MethodHandle PyObject_CallObject = fn("PyObject_CallObject", P_PP);
    public static final MethodHandle PyObject_Str = fn("PyObject_Str", P_P);
    public static final MethodHandle PyObject_Repr = fn("PyObject_Repr", P_P);
    public static final MethodHandle PyObject_IsInstance = fn("PyObject_IsInstance", I_PP);
    public static final MethodHandle PyObject_IsTrue = fn("PyObject_IsTrue", I_P);
    public static final MethodHandle PyObject_GetItem = fn("PyObject_GetItem", P_PP);

    // Numbers, strings, bytes
    public static final MethodHandle PyLong_FromLongLong = fn("PyLong_FromLongLong", FunctionDescriptor.of(ADDRESS, JAVA_LONG));
    public static final MethodHandle PyLong_AsLongLong = fn("PyLong_AsLongLong", FunctionDescriptor.of(JAVA_LONG, ADDRESS));
    public static final MethodHandle PyFloat_FromDouble = fn("PyFloat_FromDouble", FunctionDescriptor.of(ADDRESS, JAVA_DOUBLE));
    public static final MethodHandle PyFloat_AsDouble = fn("PyFloat_AsDouble", FunctionDescriptor.of(JAVA_DOUBLE, ADDRESS));
    public static final MethodHandle PyBool_FromLong = fn("PyBool_FromLong", FunctionDescriptor.of(ADDRESS, JAVA_LONG));
    public static final MethodHandle PyUnicode_FromStringAndSize = fn("PyUnicode_FromStringAndSize",
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG));
    public static final MethodHandle PyUnicode_AsUTF8AndSize = fn("PyUnicode_AsUTF8AndSize", P_PP);
    public static final MethodHandle PyBytes_FromStringAndSize = fn("PyBytes_FromStringAndSize",
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG));
    public static final MethodHandle PyBytes_AsStringAndSize = fn("PyBytes_AsStringAndSize", I_PPP);

    // Containers
    public static final MethodHandle PyTuple_New = fn("PyTuple_New", FunctionDescriptor.of(ADDRESS, JAVA_LONG));
    public static final MethodHandle PyTuple_SetItem = fn("PyTuple_SetItem", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
    public static final MethodHandle PyList_New = fn("PyList_New", FunctionDescriptor.of(ADDRESS, JAVA_LONG));
    public static final MethodHandle PyList_SetItem = fn("PyList_SetItem", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
    public static final MethodHandle PySequence_Size = fn("PySequence_Size", FunctionDescriptor.of(JAVA_LONG, ADDRESS));
    public static final MethodHandle PySequence_GetItem = fn("PySequence_GetItem", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG));
    public static final MethodHandle PyDict_New = fn("PyDict_New", FunctionDescriptor.of(ADDRESS));
    public static final MethodHandle PyDict_SetItem = fn("PyDict_SetItem", I_PPP);
    public static final MethodHandle PyDict_SetItemString = fn("PyDict_SetItemString", I_PPP);
    public static final MethodHandle PyDict_GetItemString = fn("PyDict_GetItemString", P_PP);
    public static final MethodHandle PyDict_Next = fn("PyDict_Next",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS));

    // Errors
    public static final MethodHandle PyErr_Occurred = fn("PyErr_Occurred", FunctionDescriptor.of(ADDRESS));
    public static final MethodHandle PyErr_Fetch = fn("PyErr_Fetch", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS));
    public static final MethodHandle PyErr_NormalizeException = fn("PyErr_NormalizeException",
            FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS));
    public static final MethodHandle PyErr_Restore = fn("PyErr_Restore", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS));
    public static final MethodHandle PyErr_SetString = fn("PyErr_SetString", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
    public static final MethodHandle PyErr_Clear = fn("PyErr_Clear", FunctionDescriptor.ofVoid());
    public static final MethodHandle PyException_SetTraceback = fn("PyException_SetTraceback", I_PP);

    // Functions backed by Java, and capsules
    public static final MethodHandle PyCFunction_NewEx = fn("PyCFunction_NewEx", P_PPP);
    public static final MethodHandle PyCapsule_New = fn("PyCapsule_New", P_PPP);
    public static final MethodHandle PyCapsule_GetPointer = leaf("PyCapsule_GetPointer", P_PP);
    public static final MethodHandle PyCapsule_GetName = leaf("PyCapsule_GetName", P_P);
    public static final MethodHandle PyCapsule_SetName = leaf("PyCapsule_SetName", I_PP);
    public static final MethodHandle PyCapsule_IsValid = leaf("PyCapsule_IsValid", I_PP);

    // Types made at run time, and what their methods read
    public static final MethodHandle PyType_FromSpec = fn("PyType_FromSpec", P_P);
    public static final MethodHandle PyType_GenericAlloc = fn("PyType_GenericAlloc", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG));
    public static final MethodHandle PyTuple_Size = fn("PyTuple_Size", FunctionDescriptor.of(JAVA_LONG, ADDRESS));
    public static final MethodHandle PyTuple_GetItem = fn("PyTuple_GetItem", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG));
    public static final MethodHandle PyUnicode_InternFromString = fn("PyUnicode_InternFromString", P_P);
    public static final MethodHandle PyUnicode_CompareWithASCIIString = fn("PyUnicode_CompareWithASCIIString", I_PP);

    /**
     * {@code PyObject_VectorcallMethod(name, args, nargsf, kwnames)}: a method call without a bound
     * method object or a kwargs dict; exported since 3.9, in the stable ABI from 3.12.
     */
    public static final MethodHandle PyObject_VectorcallMethod = fn("PyObject_VectorcallMethod",
            FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS));

    /** {@code PyObject_CallNoArgs}: a call without an empty argument tuple (in the stable ABI from 3.10). */
    public static final MethodHandle PyObject_CallNoArgs = fn("PyObject_CallNoArgs", P_P);

    /** {@code PyRun_String}'s start symbol for statements, as in a file. */
    public static final int Py_file_input = 257;
    /** {@code PyRun_String}'s start symbol for one expression. */
    public static final int Py_eval_input = 258;

    private CApi() {}
}
