package io.github.dlpack4j.python;

/** Child-JVM programs for {@link ExitTest}: each imports torch and numpy, then ends in its own way. */
public final class ExitScenarios {
    private ExitScenarios() {}

    public static void main(String[] args) throws Exception {
        Python py = Python.start();
        py.exec("import torch, numpy\nt = torch.ones(100)\na = numpy.ones(100)\nassert float(t.sum()) == a.sum() == 100");
        switch (args[0]) {
            case "return" -> System.out.println("main returns");
            case "exit" -> System.exit(3);
            case "uncaught-thread" -> {
                try (PyObject fail = py.function(a -> {
                    throw new IllegalStateException("thrown inside an upcall");
                })) {
                    py.setGlobal("fail", fail);
                    Thread t = new Thread(() -> py.exec("import torch\ntorch.ones(3).sum()\nfail()"), "python-caller");
                    t.start(); // dies with an uncaught PythonException
                    t.join();
                }
            }
            case "uncaught-main" -> py.exec("raise KeyError('left uncaught in main')");
            default -> throw new IllegalArgumentException(args[0]);
        }
    }
}
