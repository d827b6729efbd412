package io.github.dlpack4j.python;

/** Called from Python through JPype by {@link AttachTest}: attaches to the interpreter that hosts the JVM. */
public final class AttachProbe {
    private AttachProbe() {}

    /** Reads and changes the host interpreter's state, proving that it is the same interpreter. */
    public static String run() {
        Python py = Python.attach();
        py.exec("import __main__\n__main__.marker[0] += 1");
        try (PyObject exe = py.eval("__import__('sys').executable"); PyObject sum = py.eval("sum(range(10))")) {
            return exe.str() + " " + sum.asLong();
        }
    }
}
