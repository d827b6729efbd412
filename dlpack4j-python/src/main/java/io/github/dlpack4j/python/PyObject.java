package io.github.dlpack4j.python;

import io.github.dlpack4j.internal.SafetyNet;
import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.Convert;
import io.github.dlpack4j.python.interpreter.CpythonLayout;
import io.github.dlpack4j.python.interpreter.Gil;
import io.github.dlpack4j.python.interpreter.Names;
import io.github.dlpack4j.python.interpreter.PendingReleases;
import io.github.dlpack4j.python.interpreter.PyErrors;
import io.github.dlpack4j.python.interpreter.PyObjects;
import io.github.dlpack4j.python.interpreter.PythonThreads;
import io.github.dlpack4j.python.interpreter.Refs;
import io.github.dlpack4j.python.interpreter.Shutdown;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.Map;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One reference to a Python object. {@link #close()} releases it: at once on a thread that holds the
 * GIL, otherwise when the next thread takes the GIL (within milliseconds), so that closing never
 * waits for the GIL. A reference that is never closed is released the same way by a
 * cleaner thread once the {@code PyObject} is unreachable, unless the JVM is shutting down, when it
 * is left alone (Python may be tearing down too).
 *
 * <p>Every method takes the GIL for its own duration, from whatever platform thread calls it.
 *
 * <p>For example:
 * {@snippet :
 * Python py = Python.start();
 * py.exec("def scale(x, factor=2):\n    return x * factor");
 * try (PyObject scale = py.getGlobal("scale");
 *      PyObject r = scale.callKw(Map.of("factor", 10), 4)) {   // scale(4, factor=10)
 *     long forty = r.asLong();
 *     Object six = scale.invoke(3);                            // 6L, converted to Java
 * }
 * }
 */
public final class PyObject implements AutoCloseable {
    private static final VarHandle CLOSED;

    static {
        try {
            CLOSED = MethodHandles.lookup().findVarHandle(PyObject.class, "closed", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
        PyObjects.install(new Access());
    }

    /** What the module's internal packages may do with this type and {@link PythonException} ({@link PyObjects}). */
    private static final class Access implements PyObjects.Access {
        @Override
        public PyObject steal(MemorySegment newReference) {
            return new PyObject(newReference);
        }

        @Override
        public MemorySegment borrow(PyObject o) {
            return o.borrow();
        }

        @Override
        public MemorySegment newReference(PyObject o) {
            return o.newReference();
        }

        @Override
        public PythonException exception(String type, String message, String traceback, PyObject[] original) {
            return new PythonException(type, message, traceback, original);
        }

        @Override
        public PyObject[] original(PythonException e) {
            return e.original();
        }
    }

    /** The {@code PyObject*} (a long, not a segment: no object kept per reference). */
    private final long ptr;
    private final Cleaner.Cleanable cleanable;
    /** Set once by {@link #close()}, through {@link #CLOSED} (a field, not an AtomicBoolean: one object less per call). */
    private volatile boolean closed;

    private PyObject(MemorySegment ptr) {
        this.ptr = ptr.address();
        this.cleanable = SafetyNet.register(this, new Release(this.ptr));
    }

    /** Takes over a new reference (not NULL). */
    static PyObject steal(MemorySegment ptr) {
        return new PyObject(ptr);
    }

    /** Takes over a new reference, or throws the pending Python error if it is NULL. */
    static PyObject stealChecked(MemorySegment ptr) {
        return new PyObject(PyErrors.check(ptr));
    }

    /**
     * Drops the reference: now if this thread holds the GIL, else through {@link PendingReleases}
     * (this object is the queue's node). Run once, by {@code close()} or the cleaner.
     */
    private static final class Release extends PendingReleases.Node implements Runnable {
        private final long address;

        Release(long address) {
            this.address = address;
        }

        @Override
        public void run() {
            if (Shutdown.isShuttingDown()) {
                return;
            }
            if (Gil.isHeld()) {
                release();
            } else {
                PendingReleases.defer(this);
            }
        }

        @Override
        protected void release() {
            Refs.decRef(MemorySegment.ofAddress(address));
        }
    }

    /** {@return the {@code PyObject*}, for code that calls the C API itself} Valid while this is open. */
    public MemorySegment address() {
        checkOpen();
        return MemorySegment.ofAddress(ptr);
    }

    /** A new reference to the object, for the C API; the caller owns it. Needs the GIL. */
    MemorySegment newReference() {
        checkOpen();
        MemorySegment p = MemorySegment.ofAddress(ptr);
        Refs.incRef(p);
        return p;
    }

    /** The object pointer without a new reference; needs the GIL and an open object. */
    MemorySegment borrow() {
        checkOpen();
        return MemorySegment.ofAddress(ptr);
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("PyObject is closed");
        }
    }

    /**
     * {@code getattr(self, name)}.
     *
     * @param name the attribute's name
     * @return a new reference to the attribute's value
     */
    public PyObject attr(String name) {
        return Gil.with(() -> {
            return steal(Names.getAttr(borrow(), name));
        });
    }

    /**
     * {@code setattr(self, name, value)}, converting {@code value} as {@link Python#toPython}.
     *
     * @param name  the attribute's name
     * @param value a Java value or a {@link PyObject}
     */
    public void setAttr(String name, Object value) {
        Gil.with(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment v = Convert.toPython(value);
                try {
                    PyErrors.check((int) CApi.PyObject_SetAttrString.invokeExact(borrow(), arena.allocateFrom(name), v));
                } finally {
                    Refs.decRef(v);
                }
            }
            return null;
        });
    }

    /**
     * {@return whether the object has the attribute {@code name}}
     *
     * @param name the attribute's name
     */
    public boolean hasAttr(String name) {
        return Gil.with(() -> {
            try (Arena arena = Arena.ofConfined()) {
                return (int) CApi.PyObject_HasAttrString.invokeExact(borrow(), arena.allocateFrom(name)) == 1;
            }
        });
    }

    /**
     * {@code self[key]}.
     *
     * @param key an index or key, converted as {@link Python#toPython}
     * @return a new reference to the item
     */
    public PyObject get(Object key) {
        return Gil.with(() -> {
            MemorySegment k = Convert.toPython(key);
            try {
                return stealChecked((MemorySegment) CApi.PyObject_GetItem.invokeExact(borrow(), k));
            } finally {
                Refs.decRef(k);
            }
        });
    }

    /**
     * {@code self(*args)}, each argument converted as {@link Python#toPython}.
     *
     * @param args the positional arguments
     * @return a new reference to the result
     */
    public PyObject call(Object... args) {
        if (Thread.currentThread().isVirtual()) {
            return PythonThreads.callUnchecked(() -> call(args));
        }
        int g = Gil.acquire();
        try {
            if (args.length == 0) {
                return stealChecked((MemorySegment) CApi.PyObject_CallNoArgs.invokeExact(borrow()));
            }
            MemorySegment tuple = Convert.tupleOf(args);
            try {
                return stealChecked((MemorySegment) CApi.PyObject_CallObject.invokeExact(borrow(), tuple));
            } finally {
                Refs.decRef(tuple);
            }
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        } finally {
            Gil.release(g);
        }
    }

    /**
     * {@code self(*args, **kwargs)}.
     *
     * @param kwargs the keyword arguments, converted as {@link Python#toPython}
     * @param args   the positional arguments, converted likewise
     * @return a new reference to the result
     */
    public PyObject callKw(Map<String, ?> kwargs, Object... args) {
        return Gil.with(() -> {
            MemorySegment tuple = Convert.tupleOf(args);
            MemorySegment dict = MemorySegment.NULL;
            try {
                dict = Convert.toPython(kwargs);
                return stealChecked((MemorySegment) CApi.PyObject_Call.invokeExact(borrow(), tuple, dict));
            } finally {
                Refs.decRef(tuple);
                if (dict.address() != 0) {
                    Refs.decRef(dict);
                }
            }
        });
    }

    /**
     * {@code self(*args)} converted to a Java value as {@link #toJava()} does, all under one hold of
     * the GIL: the cheapest way to call Python for a result.
     *
     * @param args the positional arguments, converted as {@link Python#toPython}
     * @return the result as a Java value
     */
    public Object invoke(Object... args) {
        if (Thread.currentThread().isVirtual()) {
            return PythonThreads.callUnchecked(() -> invoke(args));
        }
        int g = Gil.acquire();
        try {
            MemorySegment result;
            if (args.length == 0) {
                result = PyErrors.check((MemorySegment) CApi.PyObject_CallNoArgs.invokeExact(borrow()));
            } else {
                MemorySegment tuple = Convert.tupleOf(args);
                try {
                    result = PyErrors.check((MemorySegment) CApi.PyObject_CallObject.invokeExact(borrow(), tuple));
                } finally {
                    Refs.decRef(tuple);
                }
            }
            try {
                return Convert.toJava(result);
            } finally {
                Refs.decRef(result);
            }
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        } finally {
            Gil.release(g);
        }
    }

    /**
     * {@code self.name(*args)}.
     *
     * @param name the method's name
     * @param args the positional arguments, converted as {@link Python#toPython}
     * @return a new reference to the result
     */
    public PyObject callMethod(String name, Object... args) {
        try (PyObject method = attr(name)) {
            return method.call(args);
        }
    }

    /** {@return {@code str(self)}} */
    public String str() {
        return Gil.with(() -> {
            return Convert.str(borrow());
        });
    }

    /** {@return {@code repr(self)}} */
    public String repr() {
        return Gil.with(() -> {
            MemorySegment r = PyErrors.check((MemorySegment) CApi.PyObject_Repr.invokeExact(borrow()));
            try {
                return Convert.toJavaString(r);
            } finally {
                Refs.decRef(r);
            }
        });
    }

    /** {@return {@code int(self)} as a long (through {@code __index__})} */
    public long asLong() {
        return Gil.with(() -> Convert.asLong(borrow()));
    }

    /** {@return {@code float(self)}} */
    public double asDouble() {
        return Gil.with(() -> {
            double v = (double) CApi.PyFloat_AsDouble.invokeExact(borrow());
            if (v == -1.0 && ((MemorySegment) CApi.PyErr_Occurred.invokeExact()).address() != 0) {
                throw PyErrors.fetchError();
            }
            return v;
        });
    }

    /** {@return {@code bool(self)}} */
    public boolean asBoolean() {
        return Gil.with(() -> {
            return PyErrors.check((int) CApi.PyObject_IsTrue.invokeExact(borrow())) == 1;
        });
    }

    /** {@return whether this is {@code None}} */
    public boolean isNone() {
        checkOpen();
        return ptr == CpythonLayout.NONE.address();
    }

    /**
     * The Java value: None → null, bool → Boolean, int → Long (BigInteger beyond 64 bits), float →
     * Double, str → String, bytes → byte[], list and tuple → List, dict → Map (recursively);
     * anything else → a new {@code PyObject} for the same object.
     *
     * @return the converted value
     */
    public Object toJava() {
        return Gil.with(() -> {
            return Convert.toJava(borrow());
        });
    }

    /** Releases the reference; idempotent. Any later use throws {@link IllegalStateException}. */
    @Override
    public void close() {
        // No compare-and-set: the safety net's entry runs the release once however many threads
        // close; the flag only makes later uses throw.
        if (!closed) {
            CLOSED.setRelease(this, true);
            cleanable.clean();
        }
        // This object is the safety net's referent: reachable until clean() is done, so that the
        // release runs here, now, and not on the cleaner thread.
        Reference.reachabilityFence(this);
    }

    /** {@return whether {@link #close()} was called} */
    public boolean isClosed() {
        return closed;
    }

    /** {@code repr(self)}, or a note that it is closed. */
    @Override
    public String toString() {
        return closed ? "PyObject(closed)" : repr();
    }
}
