package io.github.dlpack4j.python;

/**
 * A Python exception, raised by Python code that Java called: its Python type name (such as
 * {@code ValueError} or {@code numpy.exceptions.AxisError}), its message, and the formatted
 * Python traceback, which is also the end of {@link #getMessage()}.
 *
 * <p>When it propagates out of a Java function that Python called, the original Python exception
 * is raised again in Python, traceback and all.
 */
public class PythonException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** See {@link #pythonType()}. */
    private final String pythonType;
    /** See {@link #pythonMessage()}. */
    private final String pythonMessage;
    /** See {@link #pythonTraceback()}. */
    private final String pythonTraceback;
    /** The original (type, value, traceback), kept to re-raise it; null when made from Java. */
    private final transient PyObject[] original;

    PythonException(String pythonType, String pythonMessage, String pythonTraceback, PyObject[] original) {
        super(pythonType + ": " + pythonMessage + (pythonTraceback.isEmpty() ? "" : "\n" + pythonTraceback));
        this.pythonType = pythonType;
        this.pythonMessage = pythonMessage;
        this.pythonTraceback = pythonTraceback;
        this.original = original;
    }

    /**
     * An exception that a Java function called from Python throws to raise the Python exception
     * {@code pythonType} (a builtin exception name such as {@code "BufferError"} or {@code "TypeError"}).
     *
     * @param pythonType the builtin exception Python raises
     * @param message    its {@code str()}, what Python shows after the type
     */
    public PythonException(String pythonType, String message) {
        this(pythonType, message, "", null);
    }

    /** {@return the Python type's qualified name; builtins without the {@code builtins.} prefix} */
    public String pythonType() {
        return pythonType;
    }

    /** {@return {@code str()} of the Python exception} */
    public String pythonMessage() {
        return pythonMessage;
    }

    /** {@return the traceback as Python's {@code traceback.format_exception} prints it; empty if none} */
    public String pythonTraceback() {
        return pythonTraceback;
    }

    PyObject[] original() {
        return original;
    }
}
