package io.github.dlpack4j.python;

/** Called from Python through JPype by {@link AttachTest}: attaches to the interpreter that hosts the JVM. */
public final class AttachProbe {
    private AttachProbe() {}

    /**
     * Leaves the host holding everything that would call back into Java when Python frees it after
     * JPype destroyed the JVM: a Java tensor object, a NumPy array made from it, and a Java function.
     */
    public static void leaveExportsToTheHost() {
        Python py = Python.attach();
        try (io.github.dlpack4j.Tensor t = io.github.dlpack4j.Tensor.of(new double[] {1, 2, 3});
             PyObject obj = PythonDlpack.toPython(t); PyObject fn = py.function(args -> 7)) {
            py.setGlobal("java_tensor", obj);
            py.setGlobal("java_function", fn);
        }
        py.exec("""
                import numpy, __main__
                __main__.consumed = consumed = numpy.from_dlpack(java_tensor)
                print("EXPORTS", consumed.sum(), java_function(), flush=True)
                """);
    }

    /** Reads and changes the host interpreter's state, proving that it is the same interpreter. */
    public static String run() {
        Python py = Python.attach();
        py.exec("import __main__\n__main__.marker[0] += 1");
        try (PyObject exe = py.eval("__import__('sys').executable"); PyObject sum = py.eval("sum(range(10))")) {
            return exe.str() + " " + sum.asLong();
        }
    }
}
