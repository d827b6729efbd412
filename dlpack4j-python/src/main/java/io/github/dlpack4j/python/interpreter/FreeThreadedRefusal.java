package io.github.dlpack4j.python.interpreter;

/**
 * The one place that refuses a free-threaded CPython (3.13t and later, {@code Py_GIL_DISABLED}):
 * dlpack4j's threading rests on the GIL (a thread state per OS thread, releases deferred to the next
 * GIL holder, the exporter's caches guarded by it), and such a build has none; its objects also
 * have another header, so the address reads of {@link CpythonLayout} would be wrong. Two checks
 * lead here: before {@link Interpreter#start()} loads a library, from the executable's
 * {@code sysconfig} ({@link PythonLocator}); and for an interpreter already running, from the
 * header of {@code None} ({@link CpythonLayout#checkObjectHeader()}), which also covers
 * {@link Interpreter#attach()}.
 */
final class FreeThreadedRefusal {
    private FreeThreadedRefusal() {}

    /** The refusal of the executable at {@code executable}, a free-threaded build of Python {@code major.minor}. */
    static IllegalStateException ofExecutable(String executable, int major, int minor) {
        return new IllegalStateException("Python at " + executable + " is a free-threaded build (Py_GIL_DISABLED), "
                + "which dlpack4j does not support: use a build of CPython with the GIL (e.g. python" + major + "."
                + minor + ", not python" + major + "." + minor + "t)");
    }

    /** The refusal of a running interpreter whose objects lack the header of CPython's GIL builds. */
    static IllegalStateException ofRunningInterpreter() {
        return new IllegalStateException("this Python's objects do not have the object header of CPython's "
                + "GIL builds (a free-threaded build?); dlpack4j needs a Python with the GIL");
    }
}
