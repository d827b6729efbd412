package io.github.dlpack4j.spring;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

/**
 * Real torch models the tests save with the project's Python (the surefire property
 * {@code dlpack4j.python}), and a Python module of factories, importable from the tests' directory.
 */
final class TestModels {
    static final Python PY = Python.start();
    static final Path DIR = tempDir();
    /** {@code torch.nn.Linear(4, 3)} with seeded weights, scripted. */
    static final Path TORCHSCRIPT = save("linear.pt", """
            import torch
            torch.manual_seed(0)
            torch.jit.save(torch.jit.script(torch.nn.Linear(4, 3)), path)
            """);
    /** The same {@code Linear(4, 3)} exported with a dynamic dim 0. */
    static final Path EXPORTED = save("linear.pt2", """
            import torch
            torch.manual_seed(0)
            m = torch.nn.Linear(4, 3)
            shapes = {"input": {0: torch.export.Dim("rows", min=1, max=1024)}}
            torch.export.save(torch.export.export(m, (torch.zeros(2, 4),), dynamic_shapes=shapes), path)
            """);

    static {
        PY.exec("import sys\nif " + pyString(DIR.toString()) + " not in sys.path: sys.path.insert(0, "
                + pyString(DIR.toString()) + ")");
        PY.setGlobal("code", """
                import time

                import numpy as np


                def scale(factor: str):
                    k = float(factor)

                    def run(x):
                        return np.from_dlpack(x) * k

                    return run


                def kind():
                    def run(x):
                        import torch
                        return np.array([isinstance(x, torch.Tensor)])

                    return run


                def slow(seconds: str):
                    s = float(seconds)

                    def run(x):
                        time.sleep(s)
                        a = np.from_dlpack(x)
                        if a.size and a.flat[0] < 0:
                            raise ValueError("negative")
                        return a

                    return run
                """);
        save("spring_test_models.py", "open(path, 'w').write(code)\nimport importlib\nimportlib.invalidate_caches()");
    }

    private TestModels() {
    }

    /** Saves the models and the factories' module, once: a test class that names only the module calls it first. */
    static void ready() {
        // the class's initialisation does the work
    }

    private static Path tempDir() {
        try {
            Path d = Files.createTempDirectory("dlpack4j-spring-test");
            d.toFile().deleteOnExit();
            return d;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path save(String name, String code) {
        Path f = DIR.resolve(name);
        PY.exec("path = " + pyString(f.toString()) + "\n" + code);
        return f;
    }

    /** {@code Linear(4, 3)} of {@link #TORCHSCRIPT} run directly in Python on {@code values} as one row. */
    static double[] torchAnswer(float... values) {
        PY.exec("import torch\nm = torch.jit.load(" + pyString(TORCHSCRIPT.toString()) + ")");
        StringBuilder list = new StringBuilder("[");
        for (float v : values) {
            list.append(v).append(',');
        }
        try (PyObject out = PY.eval("m(torch.tensor([" + list + "]])).detach().flatten().tolist()")) {
            return ((List<?>) out.toJava()).stream().mapToDouble(v -> ((Number) v).doubleValue()).toArray();
        }
    }

    /** {@return a class loader that sees {@code file} as a resource inside a jar, under its own name} */
    static ClassLoader inJar(Path file) {
        try {
            Path jar = DIR.resolve("models.jar");
            try (OutputStream out = Files.newOutputStream(jar); JarOutputStream j = new JarOutputStream(out)) {
                j.putNextEntry(new JarEntry("models/" + file.getFileName()));
                Files.copy(file, j);
                j.closeEntry();
            }
            return new URLClassLoader(new URL[] {jar.toUri().toURL()}, TestModels.class.getClassLoader());
        } catch (MalformedURLException e) {
            throw new IllegalStateException(e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@return a class loader that sees the tests' directory as a class path folder} */
    static ClassLoader inFolder() {
        try {
            return new URLClassLoader(new URL[] {DIR.toUri().toURL()}, TestModels.class.getClassLoader());
        } catch (MalformedURLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String pyString(String s) {
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
    }
}
