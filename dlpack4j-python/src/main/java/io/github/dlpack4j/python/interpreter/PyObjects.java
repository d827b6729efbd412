package io.github.dlpack4j.python.interpreter;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonException;
import java.lang.foreign.MemorySegment;

/**
 * The API's {@link PyObject} and {@link PythonException}, made and opened from the module's
 * internal packages: what those types keep package-private (taking over a reference, the raw
 * pointer, the original Python exception) so that it is not public API. The API package installs
 * the one {@link Access} when {@code PyObject} is initialised (the pattern of the JDK's
 * {@code SharedSecrets}); the first use here initialises {@code PyObject} if nothing did yet.
 *
 * <p>Every method needs the GIL but {@link #exception} and {@link #original}.
 */
public final class PyObjects {
    /** What the API package lets its internals do with its types. */
    public interface Access {
        /** {@return a {@code PyObject} that takes over {@code newReference} (not NULL)} @param newReference a new reference */
        PyObject steal(MemorySegment newReference);

        /** {@return the object's pointer, no new reference} @param o an open object */
        MemorySegment borrow(PyObject o);

        /** {@return a new reference to the object, which the caller owns} @param o an open object */
        MemorySegment newReference(PyObject o);

        /**
         * {@return an exception from Python}
         *
         * @param type      the Python type's qualified name
         * @param message   {@code str()} of the exception
         * @param traceback the formatted traceback, empty if none
         * @param original  (type, value, traceback) to raise it again, or null
         */
        PythonException exception(String type, String message, String traceback, PyObject[] original);

        /** {@return (type, value, traceback) of the Python exception behind {@code e}, or null} @param e an exception */
        PyObject[] original(PythonException e);
    }

    private static volatile Access access;

    private PyObjects() {}

    /**
     * Installs the API's access, once (from {@code PyObject}'s static initialiser).
     *
     * @param a the access
     * @throws IllegalStateException if one was installed already
     */
    public static void install(Access a) {
        synchronized (PyObjects.class) {
            if (access != null) {
                throw new IllegalStateException("PyObjects access installed twice");
            }
            access = a;
        }
    }

    private static Access access() {
        Access a = access;
        if (a == null) {
            try {
                Class.forName(PyObject.class.getName(), true, PyObject.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
            a = access;
        }
        return a;
    }

    /** {@return a {@code PyObject} that takes over {@code newReference}} @param newReference a new reference, not NULL */
    public static PyObject steal(MemorySegment newReference) {
        return access().steal(newReference);
    }

    /**
     * {@return a {@code PyObject} that takes over {@code newReference}}
     *
     * @param newReference a new reference, or NULL for a failed call
     * @throws PythonException the pending Python error if {@code newReference} is NULL
     */
    public static PyObject stealChecked(MemorySegment newReference) {
        return access().steal(PyErrors.check(newReference));
    }

    /** {@return {@code o}'s pointer without a new reference} @param o an open object */
    public static MemorySegment borrow(PyObject o) {
        return access().borrow(o);
    }

    /** {@return a new reference to {@code o}, which the caller owns} @param o an open object */
    public static MemorySegment newReference(PyObject o) {
        return access().newReference(o);
    }

    /**
     * {@return a {@code PythonException} for an exception from Python}
     *
     * @param type      the Python type's qualified name
     * @param message   {@code str()} of the exception
     * @param traceback the formatted traceback, empty if none
     * @param original  (type, value, traceback) to raise it again, or null
     */
    public static PythonException exception(String type, String message, String traceback, PyObject[] original) {
        return access().exception(type, message, traceback, original);
    }

    /** {@return (type, value, traceback) behind {@code e}, or null when it was made in Java} @param e an exception */
    public static PyObject[] original(PythonException e) {
        return access().original(e);
    }
}
