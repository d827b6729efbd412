package io.github.dlpack4j.python;

import io.github.dlpack4j.python.interpreter.PendingReleases;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;

/**
 * Child-JVM programs for {@link ExitTest}: each imports torch and numpy (or, with a second argument
 * {@code ctypes}, leaves a ctypes consumer's and a ctypes producer's tensors open, for a Python
 * without those; with {@code views}, leaves NumPy, torch and JAX arrays over Java tensors in Python,
 * a capsule nobody consumed and an import of a JAX array in Java, which a native exit handler drops
 * after the JVM is gone), then ends in its own way.
 */
public final class ExitScenarios {
    /** Printed by a scenario as it begins to end the JVM. */
    static final String LEAVING = "leaving";
    /** Printed through C's stdio, whose buffer only the exit writes out when the output is a pipe. */
    static final String C_STDIO_LINE = "written by C stdio";

    private ExitScenarios() {}

    public static void main(String[] args) throws Exception {
        Python py = Python.start();
        String setup = args.length > 1 ? args[1] : "";
        boolean ctypes = setup.equals("ctypes");
        if (setup.equals("views")) {
            try (PyObject java = PythonDlpack.toPython(io.github.dlpack4j.Tensor.of(new double[] {1, 2, 3}))) {
                py.setGlobal("java_tensor", java);
            }
            py.exec("import ctypes, numpy, torch, jax.numpy as jnp\n"
                    + "views = [numpy.from_dlpack(java_tensor), torch.from_dlpack(java_tensor), jnp.from_dlpack(java_tensor)]\n"
                    + "unconsumed = java_tensor.__dlpack__(max_version=(1, 0))\n"
                    + "assert [float(v.sum()) for v in views] == [6.0] * 3\n"
                    // A native exit handler that lets go of Python objects, as torch's static destructors
                    // do: it runs after the JVM is gone, and each of these calls a function of dlpack4j's.
                    + "@ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p)\n"
                    + "def drop_at_exit(status, arg):\n"
                    + "    global unconsumed, java_tensor\n"
                    + "    views.clear()\n"
                    + "    del unconsumed, java_tensor\n"
                    + "ctypes.CDLL(None).on_exit(drop_at_exit, None)");
            try (PyObject jax = py.eval("jnp.arange(3.0)")) {
                PythonDlpack.fromDlpack(jax); // never closed
            }
        } else if (ctypes) {
            py.exec(CtypesDlpack.STRUCTS + "kept = []\nleft_open = Deleter(lambda p: None)");
            try (PyObject java = PythonDlpack.toPython(io.github.dlpack4j.Tensor.of(new double[] {1, 2}))) {
                py.setGlobal("java_tensor", java);
            }
            py.exec("unconsumed = java_tensor.__dlpack__(max_version=(1, 0))\n"
                    + "assert consume(java_tensor)[4] == [1.0, 2.0]");
            try (PyObject capsule = py.eval("versioned_capsule([1, 2], left_open, kept)")) {
                PythonDlpack.fromDlpack(capsule); // never closed
            }
        } else {
            py.exec("import torch, numpy\nt = torch.ones(100)\na = numpy.ones(100)\nassert float(t.sum()) == a.sum() == 100");
        }
        // C stdio into a pipe is written out by exit only: an exit that skips the handlers still must.
        py.exec("import ctypes\nctypes.CDLL(None).printf(b'" + C_STDIO_LINE + "\\n')");
        switch (args[0]) {
            case "return" -> System.out.println("main returns");
            case "exports-in-a-shutdown-hook" -> exportsInAShutdownHook(py);
            case "exit" -> System.exit(3);
            case "uncaught-thread" -> {
                try (PyObject fail = py.function(a -> {
                    throw new IllegalStateException("thrown inside an upcall");
                })) {
                    py.setGlobal("fail", fail);
                    String work = ctypes ? "consume(java_tensor)\n" : "import torch\ntorch.ones(3).sum()\n";
                    Thread t = new Thread(() -> py.exec(work + "fail()"), "python-caller");
                    t.start(); // dies with an uncaught PythonException
                    t.join();
                }
            }
            case "uncaught-main" -> py.exec("raise KeyError('left uncaught in main')");
            case "pending-deleters" -> {
                // Closed on main, which does not hold the GIL, while another thread's scope holds it:
                // the deleters are queued (the flusher waits for the GIL) as the JVM goes.
                java.util.List<io.github.dlpack4j.ManagedTensor> imports = new java.util.ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    try (PyObject a = py.eval("numpy.ones(1000)")) {
                        imports.add(PythonDlpack.fromDlpack(a));
                    }
                }
                CountDownLatch inScope = new CountDownLatch(1);
                CountDownLatch closed = new CountDownLatch(1);
                Thread.ofPlatform().start(() -> py.withGil(() -> {
                    inScope.countDown();
                    try {
                        closed.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }));
                inScope.await();
                imports.forEach(io.github.dlpack4j.ManagedTensor::close);
                int pending = PendingReleases.pendingDeleters();
                closed.countDown();
                System.out.println("deleters pending: " + pending);
                if (pending != 4) {
                    System.exit(5);
                }
            }
            case "daemon-in-scope" -> {
                CountDownLatch inScope = new CountDownLatch(1);
                Thread.ofPlatform().daemon().name("scope-holder").start(() -> py.withGil(() -> {
                    inScope.countDown();
                    LockSupport.park();
                }));
                inScope.await();
                System.out.println(LEAVING);
            }
            case "exit-in-scope" -> py.withGil(() -> {
                System.out.println(LEAVING);
                System.exit(4);
            });
            case "daemon-calling" -> {
                CountDownLatch calling = new CountDownLatch(1);
                Thread.ofPlatform().daemon().name("python-caller").start(() -> {
                    while (true) {
                        try (PyObject sum = py.eval("float(t.sum())")) {
                            calling.countDown();
                        }
                    }
                });
                calling.await();
                System.out.println(LEAVING);
            }
            case "python-thread-in-function-exit", "python-thread-in-function-return" -> {
                // A threading.Thread calls a Java function, which calls Python back (torch), then
                // blocks holding the GIL that Python took for the call, while main ends the JVM.
                CountDownLatch started = new CountDownLatch(1);
                CountDownLatch blocking = new CountDownLatch(1);
                try (PyObject block = py.function(a -> {
                    py.allowThreads(() -> awaitUninterruptibly(started)); // main's exec needs the GIL back first
                    try (PyObject sum = py.eval("float(t.sum())")) {
                        System.out.println("in a Java function on \"" + Thread.currentThread().getName() + '"');
                    }
                    blocking.countDown();
                    Thread.sleep(Long.MAX_VALUE);
                    return null;
                })) {
                    py.setGlobal("block", block);
                }
                py.exec("import threading\nthreading.Thread(target=block, name='python-blocker').start()");
                started.countDown();
                blocking.await();
                System.out.println(LEAVING);
                if (args[0].endsWith("exit")) {
                    System.exit(3);
                }
            }
            case "python-thread-calling" -> {
                // A threading.Thread alternates Python work and calls of a Java function as main returns.
                CountDownLatch called = new CountDownLatch(1);
                try (PyObject f = py.function(a -> {
                    if (called.getCount() != 0) {
                        System.out.println("in a Java function on \"" + Thread.currentThread().getName() + '"');
                        called.countDown();
                    }
                    return null;
                })) {
                    py.setGlobal("f", f);
                }
                py.exec("import threading\n"
                        + "def work():\n    while True:\n        sum(range(5000))\n        f()\n"
                        + "threading.Thread(target=work, name='python-worker').start()");
                called.await();
                System.out.println(LEAVING);
            }
            default -> throw new IllegalArgumentException(args[0]);
        }
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        while (true) {
            try {
                latch.await();
                return;
            } catch (InterruptedException e) {
                // only the latch ends the wait
            }
        }
    }

    /**
     * Python code run in a JVM shutdown hook, after dlpack4j's own hooks turned the release
     * trampolines off (as a graceful shutdown draining requests does): dlpack4j.Tensor objects made
     * before are freed one by one, each followed by a new one, which Python's allocator tends to put
     * at the freed one's address. Prints how many of the new ones exported another tensor than their own.
     */
    private static void exportsInAShutdownHook(Python py) {
        int rounds = 100;
        py.exec("import numpy as np\nxs = []");
        for (int i = 0; i < rounds; i++) {
            try (PyObject p = PythonDlpack.toPython(io.github.dlpack4j.Tensor.of(new double[] {i}))) {
                py.setGlobal("p", p);
                py.exec("xs.append(p); del p");
            }
        }
        io.github.dlpack4j.Tensor own = io.github.dlpack4j.Tensor.of(new double[] {-1});
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                Thread.sleep(300); // dlpack4j's hooks have run by now
            } catch (InterruptedException e) {
                return;
            }
            int wrong = 0;
            for (int i = 0; i < rounds; i++) {
                // Looked up (the instance cache now holds xs[i]), then freed by Python.
                py.exec("v = np.from_dlpack(xs[%d]).tolist()[0]; xs[%d] = None".formatted(i, i));
                PyObject fresh = PythonDlpack.toPython(own); // left to the process's end
                py.setGlobal("y", fresh);
                try (PyObject got = py.eval("np.from_dlpack(y).tolist()[0]")) {
                    if (got.asDouble() != -1) {
                        wrong++;
                    }
                }
            }
            System.out.println("wrong exports in a shutdown hook: " + wrong + " of " + rounds);
        }));
        System.out.println("main returns");
    }
}
