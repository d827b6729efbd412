package io.github.dlpack4j.python;

/**
 * Java code that Python can call, made into a Python callable by {@link Python#function}.
 *
 * <p>It runs on the calling Python thread with the GIL held. Its result is converted as
 * {@link Python#toPython} converts. Whatever it throws becomes a Python exception (never a crash):
 * a {@link PythonException} re-raises the Python exception it carries or names,
 * {@code IllegalArgumentException} becomes {@code ValueError}, {@code NullPointerException} and
 * {@code ClassCastException} {@code TypeError}, {@code OutOfMemoryError} {@code MemoryError}, and
 * anything else {@code RuntimeError} with the Java class and message.
 */
@FunctionalInterface
public interface PythonFunction {
    /**
     * Handles one call.
     *
     * @param args the positional arguments, each a new reference the function may keep or close
     * @return the result: null for None, a {@link PyObject}, or a Java value to convert
     * @throws Exception anything, raised in Python as the Python exception described above
     */
    Object call(PyObject... args) throws Exception;
}
