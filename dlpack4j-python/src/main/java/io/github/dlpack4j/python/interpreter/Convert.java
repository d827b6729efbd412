package io.github.dlpack4j.python.interpreter;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import io.github.dlpack4j.python.PyObject;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Java values to Python objects and back: numbers, strings, bytes, lists, tuples and dicts. Every
 * method needs the GIL; Python objects are passed as raw {@code PyObject*} and returned as new
 * references.
 */
public final class Convert {
    private static final MemorySegment NONE = CpythonLayout.NONE;
    private static final MemorySegment TRUE = CpythonLayout.TRUE;
    private static final MemorySegment FALSE = CpythonLayout.FALSE;

    private Convert() {}

    /** A new reference to None. */
    public static MemorySegment none() {
        Refs.incRef(NONE);
        return NONE;
    }

    public static boolean isNone(MemorySegment o) {
        return o.address() == NONE.address();
    }

    /** A new Python object for a Java value (see {@link io.github.dlpack4j.python.Python#toPython}). */
    public static MemorySegment toPython(Object v) {
        try {
            return switch (v) {
                case null -> none();
                case PyObject p -> PyObjects.newReference(p);
                case Boolean b -> PyErrors.check((MemorySegment) CApi.PyBool_FromLong.invokeExact(b ? 1L : 0L));
                case Byte b -> fromLong(b);
                case Short s -> fromLong(s);
                case Integer i -> fromLong(i);
                case Long l -> fromLong(l);
                case BigInteger big -> bigInteger(big);
                case Float f -> PyErrors.check((MemorySegment) CApi.PyFloat_FromDouble.invokeExact((double) f));
                case Double d -> PyErrors.check((MemorySegment) CApi.PyFloat_FromDouble.invokeExact((double) d));
                case CharSequence s -> newString(s.toString());
                case Character c -> newString(c.toString());
                case byte[] bytes -> bytes(bytes);
                case Map<?, ?> map -> dict(map);
                case Collection<?> c -> list(c);
                case Object[] array -> list(List.of(array));
                default -> throw new IllegalArgumentException("cannot convert " + v.getClass().getName()
                        + " to Python; supported: null, Boolean, integer types, BigInteger, Float, Double, String, "
                        + "byte[], List, Map, Object[] and PyObject");
            };
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }

    private static MemorySegment fromLong(long v) throws Throwable {
        return PyErrors.check((MemorySegment) CApi.PyLong_FromLongLong.invokeExact(v));
    }

    private static MemorySegment bigInteger(BigInteger v) throws Throwable {
        MemorySegment builtins = Names.importModule("builtins");
        MemorySegment intType = Names.getAttr(builtins, "int");
        Refs.decRef(builtins);
        MemorySegment args = tuple(new MemorySegment[] {newString(v.toString())}, true);
        try {
            return PyErrors.check((MemorySegment) CApi.PyObject_CallObject.invokeExact(intType, args));
        } finally {
            Refs.decRef(args);
            Refs.decRef(intType);
        }
    }

    private static MemorySegment bytes(byte[] b) throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(Math.max(b.length, 1));
            MemorySegment.copy(b, 0, buf, JAVA_BYTE, 0, b.length);
            return PyErrors.check((MemorySegment) CApi.PyBytes_FromStringAndSize.invokeExact(buf, (long) b.length));
        }
    }

    private static MemorySegment list(Collection<?> c) throws Throwable {
        MemorySegment list = PyErrors.check((MemorySegment) CApi.PyList_New.invokeExact((long) c.size()));
        long i = 0;
        try {
            for (Object item : c) {
                MemorySegment o = toPython(item);
                PyErrors.check((int) CApi.PyList_SetItem.invokeExact(list, i++, o)); // steals o
            }
        } catch (Throwable t) {
            Refs.decRef(list);
            throw t;
        }
        return list;
    }

    private static MemorySegment dict(Map<?, ?> map) throws Throwable {
        MemorySegment dict = PyErrors.check((MemorySegment) CApi.PyDict_New.invokeExact());
        try {
            for (Map.Entry<?, ?> e : map.entrySet()) {
                MemorySegment k = toPython(e.getKey());
                MemorySegment v;
                try {
                    v = toPython(e.getValue());
                } catch (Throwable t) {
                    Refs.decRef(k);
                    throw t;
                }
                int status = (int) CApi.PyDict_SetItem.invokeExact(dict, k, v);
                Refs.decRef(k);
                Refs.decRef(v);
                PyErrors.check(status);
            }
        } catch (Throwable t) {
            Refs.decRef(dict);
            throw t;
        }
        return dict;
    }

    /** A new tuple of new references to {@code items} (the items are borrowed). */
    public static MemorySegment tuple(MemorySegment[] items) {
        return tuple(items, false);
    }

    /** A new tuple; {@code steal} means the items' references are taken over. */
    public static MemorySegment tuple(MemorySegment[] items, boolean steal) {
        try {
            MemorySegment t = PyErrors.check((MemorySegment) CApi.PyTuple_New.invokeExact((long) items.length));
            for (int i = 0; i < items.length; i++) {
                if (!steal) {
                    Refs.incRef(items[i]);
                }
                PyErrors.check((int) CApi.PyTuple_SetItem.invokeExact(t, (long) i, items[i]));
            }
            return t;
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }

    /** A new tuple of Java values converted to Python. */
    public static MemorySegment tupleOf(Object[] values) {
        MemorySegment[] items = new MemorySegment[values.length];
        try {
            for (int i = 0; i < values.length; i++) {
                items[i] = toPython(values[i]);
            }
        } catch (RuntimeException e) {
            for (MemorySegment o : items) {
                if (o != null) {
                    Refs.decRef(o);
                }
            }
            throw e;
        }
        return tuple(items, true);
    }

    private static boolean isInstance(MemorySegment o, MemorySegment type) throws Throwable {
        return PyErrors.check((int) CApi.PyObject_IsInstance.invokeExact(o, type)) == 1;
    }

    /**
     * The Java value of a Python object (borrowed): None → null, bool → Boolean, int → Long (or
     * BigInteger beyond 64 bits), float → Double, str → String, bytes → byte[], list and tuple →
     * List, dict → Map; anything else → a {@link PyObject} holding a new reference.
     */
    public static Object toJava(MemorySegment o) {
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
            Object v = leaf(o);
            return v == CONTAINER ? containers(o) : v;
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }

    /** What {@link #leaf} returns for a list, tuple or dict: converted by {@link #containers}. */
    private static final Object CONTAINER = new Object();

    /** The Java value of anything but a list, tuple or dict, for which it returns {@link #CONTAINER}. */
    private static Object leaf(MemorySegment o) throws Throwable {
        long a = o.address();
        if (a == NONE.address()) {
            return null;
        }
        if (a == TRUE.address() || a == FALSE.address()) {
            return a == TRUE.address();
        }
        if (isInstance(o, CpythonLayout.LONG_TYPE)) {
            long v = (long) CApi.PyLong_AsLongLong.invokeExact(o);
            if (v == -1 && ((MemorySegment) CApi.PyErr_Occurred.invokeExact()).address() != 0) {
                PyErrors.clearError();
                return new BigInteger(str(o));
            }
            return v;
        }
        if (isInstance(o, CpythonLayout.FLOAT_TYPE)) {
            return (double) CApi.PyFloat_AsDouble.invokeExact(o);
        }
        if (isInstance(o, CpythonLayout.UNICODE_TYPE)) {
            return toJavaString(o);
        }
        if (isInstance(o, CpythonLayout.BYTES_TYPE)) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment buf = arena.allocate(ADDRESS);
                MemorySegment len = arena.allocate(JAVA_LONG);
                PyErrors.check((int) CApi.PyBytes_AsStringAndSize.invokeExact(o, buf, len));
                return buf.get(ADDRESS, 0).reinterpret(len.get(JAVA_LONG, 0)).toArray(JAVA_BYTE);
            }
        }
        if (isInstance(o, CpythonLayout.LIST_TYPE) || isInstance(o, CpythonLayout.TUPLE_TYPE)
                || isInstance(o, CpythonLayout.DICT_TYPE)) {
            return CONTAINER;
        }
        Refs.incRef(o);
        return PyObjects.steal(o);
    }

    /**
     * A list, tuple or dict being converted: its Python object (a reference of its own), its Java
     * value, and how far the conversion got.
     */
    private static final class Container {
        final MemorySegment object;
        final List<Object> list;
        final Map<Object, Object> map;
        final long size;
        long next;
        /** {@code PyDict_Next}'s position, key and value, for a dict. */
        final MemorySegment pos;
        final MemorySegment key;
        final MemorySegment value;

        Container(MemorySegment object, Arena arena) throws Throwable {
            this.object = object;
            if (isInstance(object, CpythonLayout.DICT_TYPE)) {
                map = new LinkedHashMap<>();
                list = null;
                size = 0;
                pos = arena.allocate(JAVA_LONG);
                key = arena.allocate(ADDRESS);
                value = arena.allocate(ADDRESS);
            } else {
                size = PyErrors.checkSize((long) CApi.PySequence_Size.invokeExact(object));
                list = new ArrayList<>((int) size);
                map = null;
                pos = key = value = null;
            }
        }

        Object java() {
            return list != null ? list : map;
        }
    }

    /**
     * Converts a list, tuple or dict and everything in it without recursion, so that no depth of
     * nesting runs the thread out of stack (a {@link StackOverflowError} would also skip the
     * decrefs of the objects being converted). A failure (a str that UTF-8 cannot carry) lets go of
     * what was converted before it; a dict key that Python tells apart from an earlier one and Java
     * does not (two NaNs) keeps the last value, as {@code Map.put} does, and lets go of the other.
     */
    private static Object containers(MemorySegment root) throws Throwable {
        ArrayDeque<Container> open = new ArrayDeque<>();
        Object result = null;
        try (Arena arena = Arena.ofConfined()) {
            try {
                Refs.incRef(root);
                Container first;
                try {
                    first = new Container(root, arena);
                } catch (Throwable t) {
                    Refs.decRef(root);
                    throw t;
                }
                open.push(first);
                result = first.java();
                while (!open.isEmpty()) {
                    Container c = open.peek();
                    if (c.list != null) {
                        if (c.next == c.size) {
                            Refs.decRef(open.pop().object);
                            continue;
                        }
                        MemorySegment item = PyErrors.check((MemorySegment) CApi.PySequence_GetItem.invokeExact(c.object, c.next++));
                        c.list.add(child(item, open, arena)); // steals item
                    } else {
                        if ((int) CApi.PyDict_Next.invokeExact(c.object, c.pos, c.key, c.value) == 0) {
                            Refs.decRef(open.pop().object);
                            continue;
                        }
                        // Keys are hashable (no list or dict): a tuple key converts in a call of its own.
                        Object k = toJava(c.key.get(ADDRESS, 0));
                        Object v;
                        try {
                            MemorySegment borrowed = c.value.get(ADDRESS, 0);
                            Refs.incRef(borrowed);
                            v = child(borrowed, open, arena);
                        } catch (Throwable t) {
                            closeObjects(k);
                            throw t;
                        }
                        if (c.map.containsKey(k)) {
                            closeObjects(k);
                            closeObjects(c.map.get(k));
                        }
                        c.map.put(k, v);
                    }
                }
                return result;
            } catch (Throwable t) {
                for (Container c : open) {
                    Refs.decRef(c.object);
                }
                closeObjects(result);
                throw t;
            }
        }
    }

    /**
     * A container's item (a new reference, which this takes over): its Java value, or for a list,
     * tuple or dict an empty Java container that the conversion fills once it is pushed on {@code open}.
     */
    private static Object child(MemorySegment item, ArrayDeque<Container> open, Arena arena)
            throws Throwable {
        Object v;
        try {
            v = leaf(item);
        } catch (Throwable t) {
            Refs.decRef(item);
            throw t;
        }
        if (v != CONTAINER) {
            Refs.decRef(item);
            return v;
        }
        Container c;
        try {
            c = new Container(item, arena);
        } catch (Throwable t) {
            Refs.decRef(item);
            throw t;
        }
        open.push(c); // its reference is released when it is popped
        return c.java();
    }

    /** Closes the {@link PyObject}s in a (partly) converted value, without recursion. */
    private static void closeObjects(Object value) {
        ArrayDeque<Object> left = new ArrayDeque<>();
        if (value != null) {
            left.push(value);
        }
        while (!left.isEmpty()) {
            switch (left.pop()) {
                case PyObject p -> p.close();
                case List<?> list -> list.forEach(x -> {
                    if (x != null) {
                        left.push(x);
                    }
                });
                case Map<?, ?> map -> map.forEach((k, x) -> {
                    if (k != null) {
                        left.push(k);
                    }
                    if (x != null) {
                        left.push(x);
                    }
                });
                default -> {
                }
            }
        }
    }

    /** {@code int(o)} through {@code __index__}; Python's own TypeError or OverflowError if it has none or is too big. */
    public static long asLong(MemorySegment o) throws Throwable {
        long v = (long) CApi.PyLong_AsLongLong.invokeExact(o);
        if (v == -1 && ((MemorySegment) CApi.PyErr_Occurred.invokeExact()).address() != 0) {
            throw PyErrors.fetchError();
        }
        return v;
    }

    /** A new {@code str}. */
    public static MemorySegment newString(String s) {
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(Math.max(utf8.length, 1));
            MemorySegment.copy(utf8, 0, buf, ValueLayout.JAVA_BYTE, 0, utf8.length);
            return PyErrors.check((MemorySegment) CApi.PyUnicode_FromStringAndSize.invokeExact(buf, (long) utf8.length));
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }

    /** The Java string of a Python {@code str}. */
    public static String toJavaString(MemorySegment str) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment size = arena.allocate(JAVA_LONG);
            MemorySegment chars = PyErrors.check((MemorySegment) CApi.PyUnicode_AsUTF8AndSize.invokeExact(str, size));
            long n = size.get(JAVA_LONG, 0);
            return new String(chars.reinterpret(n).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }

    /** {@code str(o)} as a Java string. */
    public static String str(MemorySegment o) {
        try {
            MemorySegment s = PyErrors.check((MemorySegment) CApi.PyObject_Str.invokeExact(o));
            try {
                return toJavaString(s);
            } finally {
                Refs.decRef(s);
            }
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }
}
