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
 *
 * <p>A thread that Python started (a {@code threading.Thread}) and that called a Java function stays
 * attached to the JVM until it ends, and holds the GIL whenever it is in one. End such threads before
 * the JVM exits: when one is still alive then, the JVM still exits within a second with its exit
 * status, but the process skips the native exit handlers of its libraries (torch's would wait for
 * ever for a GIL that the JVM's exit stopped the thread holding) and says so on stderr.
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
