package io.github.dlpack4j.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Java values to Python objects and back. Every method needs the GIL; Python objects are passed
 * as raw {@code PyObject*} and returned as new references.
 */
final class Convert {
    private static final MemorySegment NONE = CApi.symbol("_Py_NoneStruct");
    private static final MemorySegment TRUE = CApi.symbol("_Py_TrueStruct");
    private static final MemorySegment FALSE = CApi.symbol("_Py_FalseStruct");
    private static final MemorySegment LONG_TYPE = CApi.symbol("PyLong_Type");
    private static final MemorySegment FLOAT_TYPE = CApi.symbol("PyFloat_Type");
    private static final MemorySegment UNICODE_TYPE = CApi.symbol("PyUnicode_Type");
    private static final MemorySegment BYTES_TYPE = CApi.symbol("PyBytes_Type");
    private static final MemorySegment LIST_TYPE = CApi.symbol("PyList_Type");
    private static final MemorySegment TUPLE_TYPE = CApi.symbol("PyTuple_Type");
    private static final MemorySegment DICT_TYPE = CApi.symbol("PyDict_Type");

    private Convert() {}

    /** A new reference to None. */
    static MemorySegment none() {
        Py.incRef(NONE);
        return NONE;
    }

    static boolean isNone(MemorySegment o) {
        return o.address() == NONE.address();
    }

    /** A new Python object for a Java value (see {@link Python#toPython}). */
    static MemorySegment toPython(Object v) {
        try {
            return switch (v) {
                case null -> none();
                case PyObject p -> p.newReference();
                case Boolean b -> Py.check((MemorySegment) CApi.PyBool_FromLong.invokeExact(b ? 1L : 0L));
                case Byte b -> fromLong(b);
                case Short s -> fromLong(s);
                case Integer i -> fromLong(i);
                case Long l -> fromLong(l);
                case BigInteger big -> bigInteger(big);
                case Float f -> Py.check((MemorySegment) CApi.PyFloat_FromDouble.invokeExact((double) f));
                case Double d -> Py.check((MemorySegment) CApi.PyFloat_FromDouble.invokeExact((double) d));
                case CharSequence s -> Py.newString(s.toString());
                case Character c -> Py.newString(c.toString());
                case byte[] bytes -> bytes(bytes);
                case Map<?, ?> map -> dict(map);
                case Collection<?> c -> list(c);
                case Object[] array -> list(List.of(array));
                default -> throw new IllegalArgumentException("cannot convert " + v.getClass().getName()
                        + " to Python; supported: null, Boolean, integer types, BigInteger, Float, Double, String, "
                        + "byte[], List, Map, Object[] and PyObject");
            };
        } catch (Throwable t) {
            throw Py.unchecked(t);
        }
    }

    private static MemorySegment fromLong(long v) throws Throwable {
        return Py.check((MemorySegment) CApi.PyLong_FromLongLong.invokeExact(v));
    }

    private static MemorySegment bigInteger(BigInteger v) throws Throwable {
        MemorySegment builtins = Py.importModule("builtins");
        MemorySegment intType = Py.getAttr(builtins, "int");
        Py.decRef(builtins);
        MemorySegment args = tuple(new MemorySegment[] {Py.newString(v.toString())}, true);
        try {
            return Py.check((MemorySegment) CApi.PyObject_CallObject.invokeExact(intType, args));
        } finally {
            Py.decRef(args);
            Py.decRef(intType);
        }
    }

    private static MemorySegment bytes(byte[] b) throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(Math.max(b.length, 1));
            MemorySegment.copy(b, 0, buf, JAVA_BYTE, 0, b.length);
            return Py.check((MemorySegment) CApi.PyBytes_FromStringAndSize.invokeExact(buf, (long) b.length));
        }
    }

    private static MemorySegment list(Collection<?> c) throws Throwable {
        MemorySegment list = Py.check((MemorySegment) CApi.PyList_New.invokeExact((long) c.size()));
        long i = 0;
        try {
            for (Object item : c) {
                MemorySegment o = toPython(item);
                Py.check((int) CApi.PyList_SetItem.invokeExact(list, i++, o)); // steals o
            }
        } catch (Throwable t) {
            Py.decRef(list);
            throw t;
        }
        return list;
    }

    private static MemorySegment dict(Map<?, ?> map) throws Throwable {
        MemorySegment dict = Py.check((MemorySegment) CApi.PyDict_New.invokeExact());
        try {
            for (Map.Entry<?, ?> e : map.entrySet()) {
                MemorySegment k = toPython(e.getKey());
                MemorySegment v;
                try {
                    v = toPython(e.getValue());
                } catch (Throwable t) {
                    Py.decRef(k);
                    throw t;
                }
                int status = (int) CApi.PyDict_SetItem.invokeExact(dict, k, v);
                Py.decRef(k);
                Py.decRef(v);
                Py.check(status);
            }
        } catch (Throwable t) {
            Py.decRef(dict);
            throw t;
        }
        return dict;
    }

    /** A new tuple of new references to {@code items} (the items are borrowed). */
    static MemorySegment tuple(MemorySegment[] items) {
        return tuple(items, false);
    }

    /** A new tuple; {@code steal} means the items' references are taken over. */
    static MemorySegment tuple(MemorySegment[] items, boolean steal) {
        try {
            MemorySegment t = Py.check((MemorySegment) CApi.PyTuple_New.invokeExact((long) items.length));
            for (int i = 0; i < items.length; i++) {
                if (!steal) {
                    Py.incRef(items[i]);
                }
                Py.check((int) CApi.PyTuple_SetItem.invokeExact(t, (long) i, items[i]));
            }
            return t;
        } catch (Throwable t) {
            throw Py.unchecked(t);
        }
    }

    /** A new tuple of Java values converted to Python. */
    static MemorySegment tupleOf(Object[] values) {
        MemorySegment[] items = new MemorySegment[values.length];
        try {
            for (int i = 0; i < values.length; i++) {
                items[i] = toPython(values[i]);
            }
        } catch (RuntimeException e) {
            for (MemorySegment o : items) {
                if (o != null) {
                    Py.decRef(o);
                }
            }
            throw e;
        }
        return tuple(items, true);
    }

    private static boolean isInstance(MemorySegment o, MemorySegment type) throws Throwable {
        return Py.check((int) CApi.PyObject_IsInstance.invokeExact(o, type)) == 1;
    }

    /**
     * The Java value of a Python object (borrowed): None → null, bool → Boolean, int → Long (or
     * BigInteger beyond 64 bits), float → Double, str → String, bytes → byte[], list and tuple →
     * List, dict → Map; anything else → a {@link PyObject} holding a new reference.
     */
    static Object toJava(MemorySegment o) {
        // Kept small so that callers inline it and their downcalls stay fast; the rest is out of line.
        long a = o.address();
        if (a == NONE.address()) {
            return null;
        }
        if (a == TRUE.address() || a == FALSE.address()) {
            return a == TRUE.address();
        }
        return toJavaObject(o);
    }

    private static Object toJavaObject(MemorySegment o) {
        try {
            if (isInstance(o, LONG_TYPE)) {
                long v = (long) CApi.PyLong_AsLongLong.invokeExact(o);
                if (v == -1 && ((MemorySegment) CApi.PyErr_Occurred.invokeExact()).address() != 0) {
                    Py.clearError();
                    return new BigInteger(Py.str(o));
                }
                return v;
            }
            if (isInstance(o, FLOAT_TYPE)) {
                return (double) CApi.PyFloat_AsDouble.invokeExact(o);
            }
            if (isInstance(o, UNICODE_TYPE)) {
                return Py.toJavaString(o);
            }
            if (isInstance(o, BYTES_TYPE)) {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment buf = arena.allocate(ADDRESS);
                    MemorySegment len = arena.allocate(JAVA_LONG);
                    Py.check((int) CApi.PyBytes_AsStringAndSize.invokeExact(o, buf, len));
                    return buf.get(ADDRESS, 0).reinterpret(len.get(JAVA_LONG, 0)).toArray(JAVA_BYTE);
                }
            }
            if (isInstance(o, LIST_TYPE) || isInstance(o, TUPLE_TYPE)) {
                long n = Py.checkSize((long) CApi.PySequence_Size.invokeExact(o));
                List<Object> out = new ArrayList<>((int) n);
                for (long i = 0; i < n; i++) {
                    MemorySegment item = Py.check((MemorySegment) CApi.PySequence_GetItem.invokeExact(o, i));
                    try {
                        out.add(toJava(item));
                    } finally {
                        Py.decRef(item);
                    }
                }
                return out;
            }
            if (isInstance(o, DICT_TYPE)) {
                Map<Object, Object> out = new LinkedHashMap<>();
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment pos = arena.allocate(JAVA_LONG);
                    MemorySegment key = arena.allocate(ADDRESS);
                    MemorySegment value = arena.allocate(ADDRESS);
                    while ((int) CApi.PyDict_Next.invokeExact(o, pos, key, value) != 0) {
                        out.put(toJava(key.get(ADDRESS, 0)), toJava(value.get(ADDRESS, 0)));
                    }
                }
                return out;
            }
            Py.incRef(o);
            return PyObject.steal(o);
        } catch (Throwable t) {
            throw Py.unchecked(t);
        }
    }
}
