package io.github.dlpack4j.python.protocol;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.CpythonLayout;
import io.github.dlpack4j.python.interpreter.PyObjects;
import io.github.dlpack4j.python.interpreter.Refs;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * A producer type's own {@code __dlpack__} method descriptor, called directly
 * ({@code PyObject_Vectorcall(method, [obj, ...])}) instead of looked up on every object
 * ({@code PyObject_VectorcallMethod}, whose lookup through the type's method cache is about a
 * twentieth of an import), where the lookup can only ever find it. Found once per type by
 * {@link #of}, and only when
 * <ul>
 *   <li>the type's own type is {@code type} itself, so that no metaclass changes how the facts
 *       below are read;</li>
 *   <li>every class of its {@code __mro__} is immutable ({@code Py_TPFLAGS_IMMUTABLETYPE}: NumPy's
 *       {@code ndarray}, builtin and most extension types), so that no class dictionary on the
 *       lookup's path can change, and {@code __dlpack__} is in the type's own dictionary, so that
 *       it is what the lookup finds first;</li>
 *   <li>its objects have no {@code __dict__} ({@code __dictoffset__} 0, no managed dictionary), so
 *       that no object can shadow the method;</li>
 *   <li>it gets attributes the generic way ({@code __getattribute__} is {@code object}'s);</li>
 *   <li>the attribute's type is a method descriptor ({@code Py_TPFLAGS_METHOD_DESCRIPTOR}), which
 *       {@code PyObject_VectorcallMethod} too calls unbound, with the object as first argument.</li>
 * </ul>
 * An object's type is read from its header on every import, so an object of another type (a
 * subclass) never takes this route by mistake. Needs the GIL.
 */
final class DlpackMethod {
    /** {@code Py_TPFLAGS_MANAGED_DICT} (3.11 on). */
    private static final long MANAGED_DICT = 1L << 4;
    /** {@code Py_TPFLAGS_IMMUTABLETYPE} (3.10 on). */
    private static final long IMMUTABLETYPE = 1L << 8;
    /** {@code Py_TPFLAGS_METHOD_DESCRIPTOR}. */
    private static final long METHOD_DESCRIPTOR = 1L << 17;

    /** {@code unsigned long PyType_GetFlags(PyTypeObject*)}: stable ABI; reads the type, nothing else. */
    private static final MethodHandle GET_FLAGS = Linker.nativeLinker().downcallHandle(CApi.symbol("PyType_GetFlags"),
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
    private static final long TYPE_TYPE = CApi.symbol("PyType_Type").address();
    private static final MemorySegment OBJECT_TYPE = CApi.symbol("PyBaseObject_Type");

    private DlpackMethod() {}

    /**
     * {@return the method that {@code obj.__dlpack__} finds on every object of exactly
     * {@code type}, as a new reference the caller keeps; null where that is not certain}
     *
     * @param type a producer's type
     */
    static PyObject of(PyObject type) {
        try {
            MemorySegment t = PyObjects.borrow(type);
            if (CpythonLayout.typeOf(t) != TYPE_TYPE || (flags(t) & MANAGED_DICT) != 0) {
                return null;
            }
            Refs.incRef(OBJECT_TYPE);
            try (PyObject object = PyObjects.steal(OBJECT_TYPE);
                 PyObject dictOffset = type.attr("__dictoffset__");
                 PyObject getattribute = type.attr("__getattribute__");
                 PyObject generic = object.attr("__getattribute__");
                 PyObject dict = type.attr("__dict__")) {
                if (dictOffset.asLong() != 0 || !sameObject(getattribute, generic) || !allImmutable(type)) {
                    return null;
                }
                PyObject method = dict.callMethod("get", "__dlpack__");
                if (method.isNone() || (flags(MemorySegment.ofAddress(CpythonLayout.typeOf(PyObjects.borrow(method))))
                        & METHOD_DESCRIPTOR) == 0) {
                    method.close();
                    return null;
                }
                return method;
            }
        } catch (Throwable e) {
            return null; // any doubt: looked up on each object
        }
    }

    /** Whether every class of {@code type.__mro__} is immutable. */
    private static boolean allImmutable(PyObject type) throws Throwable {
        return ProducerType.firstInMro(type, c -> {
            try {
                return (flags(PyObjects.borrow(c)) & IMMUTABLETYPE) == 0 ? Boolean.TRUE : null;
            } catch (Throwable e) {
                return Boolean.TRUE; // in doubt: not immutable
            }
        }) == null;
    }

    private static long flags(MemorySegment type) throws Throwable {
        return (long) GET_FLAGS.invokeExact(type);
    }

    private static boolean sameObject(PyObject a, PyObject b) {
        return PyObjects.borrow(a).address() == PyObjects.borrow(b).address();
    }
}
