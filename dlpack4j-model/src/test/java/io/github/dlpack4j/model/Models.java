package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

/** The tests' interpreter, and real torch models they save and run directly for the expected answers. */
final class Models {
    static final Python PY = Python.start();
    private static final Path DIR = tempDir();

    /** A model source whose {@code make(seconds)} sleeps that long per call and raises on a negative first element. */
    static final String SLOW_OR_FAILING = """
            import time
            import numpy as np

            def make(seconds):
                def run(x):
                    time.sleep(seconds)
                    if np.from_dlpack(x)[0] < 0:
                        raise ValueError("negative")
                    return np.from_dlpack(x)
                return run
            """;

    private Models() {
    }

    private static Path tempDir() {
        try {
            Path d = Files.createTempDirectory("dlpack4j-model-test");
            d.toFile().deleteOnExit();
            return d;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A file in the tests' directory. */
    static Path file(String name) {
        return DIR.resolve(name);
    }

    /** Runs Python code with {@code path} bound to {@code file}'s path (to save a model there). */
    static Path save(String name, String code) {
        Path f = file(name);
        PY.exec("path = " + pyString(f.toString()) + "\n" + code);
        return f;
    }

    /** Writes {@code code} as the Python module {@code name}, importable from now on. */
    static void pythonModule(String name, String code) {
        PY.exec("import sys\nif " + pyString(DIR.toString()) + " not in sys.path: sys.path.insert(0, "
                + pyString(DIR.toString()) + ")");
        PY.setGlobal("code", code);
        save(name + ".py", "open(path, 'w').write(code)\nimport importlib\nimportlib.invalidate_caches()");
    }

    /** Waits, up to 5 s, until the Python expression {@code condition} is true (a model's call has started). */
    static void await(String condition) throws InterruptedException {
        if (!becomesTrue(condition)) {
            throw new AssertionError("not within 5 s: " + condition);
        }
    }

    /** {@return whether the Python expression {@code condition} is true within about 5 s} */
    static boolean becomesTrue(String condition) throws InterruptedException {
        long until = System.nanoTime() + 5_000_000_000L;
        for (int i = 0; i < 500 && System.nanoTime() < until; i++) {
            try (PyObject s = PY.eval(condition)) {
                if (s.asBoolean()) {
                    return true;
                }
            }
            Thread.sleep(10);
        }
        return false;
    }

    /**
     * Asserts that live exports and native bytes come back to at most what they were (after
     * Python's collector ran): at most, as what earlier tests of this JVM left may be released
     * meanwhile. Deleters that closes on threads without the GIL queued run at a later GIL holder,
     * which may be another thread (the release flusher) draining at the same time as this one:
     * CI once saw 52 exports still out right after the closes of 2,000 outputs on virtual threads,
     * which no local run repeated. So the counts are looked at again, every 10 ms for up to 5 s,
     * before a leak is reported.
     */
    static void assertReleasedSince(int liveExports, long nativeBytes) {
        long until = System.nanoTime() + 5_000_000_000L;
        while (true) {
            try (PyObject collected = PY.eval("__import__('gc').collect()")) {
                boolean released = Dlpack.liveExports() <= liveExports && Dlpack.nativeBytesInUse() <= nativeBytes;
                if (released || System.nanoTime() - until > 0) {
                    assertThat(Dlpack.liveExports()).as("exports whose deleter has not run").isLessThanOrEqualTo(liveExports);
                    assertThat(Dlpack.nativeBytesInUse()).as("dlpack4j's native bytes").isLessThanOrEqualTo(nativeBytes);
                    return;
                }
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for releases", e);
            }
        }
    }

    /** {@code torch.nn.Linear(4, 3)} with seeded weights, scripted and saved. */
    static Path linearTorchScript() {
        return save("linear.pt", """
                import torch
                torch.manual_seed(0)
                torch.jit.save(torch.jit.script(torch.nn.Linear(4, 3)), path)
                """);
    }

    /** The same {@code Linear(4, 3)} exported, with a dynamic dim 0 when {@code dynamic}. */
    static Path linearExported(boolean dynamic) {
        return save(dynamic ? "linear-dynamic.pt2" : "linear-static.pt2", """
                import torch
                torch.manual_seed(0)
                m = torch.nn.Linear(4, 3)
                shapes = {"input": {0: torch.export.Dim("rows", min=1, max=1024)}} if %s else None
                torch.export.save(torch.export.export(m, (torch.zeros(2, 4),), dynamic_shapes=shapes), path)
                """.formatted(dynamic ? "True" : "False"));
    }

    /** {@code model(torch.tensor(values).reshape(rows, -1))} run directly in Python, as a flat list. */
    static double[] torchAnswer(String loadExpression, Path file, float[] values, int rows) {
        PY.exec("import torch\nm = " + loadExpression.replace("FILE", pyString(file.toString())));
        PY.setGlobal("values", toList(values));
        try (PyObject out = PY.eval("m(torch.tensor(values).reshape(" + rows + ", -1)).detach().flatten().tolist()")) {
            return ((List<?>) out.toJava()).stream().mapToDouble(v -> ((Number) v).doubleValue()).toArray();
        }
    }

    private static List<Float> toList(float[] values) {
        Float[] boxed = new Float[values.length];
        for (int i = 0; i < values.length; i++) {
            boxed[i] = values[i];
        }
        return List.of(boxed);
    }

    /** {@return the Python expression's value, an int} */
    static long pyLong(String expression) {
        try (PyObject v = PY.eval(expression)) {
            return v.asLong();
        }
    }

    /** Each call its own {@code length} values: a read of freed or reused memory shows as a wrong answer. */
    static float[] callValues(int caller, int call, int length) {
        float[] v = new float[length];
        for (int i = 0; i < v.length; i++) {
            v[i] = caller * 100_000f + call * length + i;
        }
        return v;
    }

    /**
     * {@return whether {@code model} answers call {@code call} of caller {@code caller} with its own
     * {@code length} values ({@link #callValues}) doubled}
     */
    static boolean answersDoubled(PythonModel model, int caller, int call, int length) {
        float[] v = callValues(caller, call, length);
        try (Tensor x = Tensor.of(v, length); Tensor y = model.predict(x)) {
            return java.util.Arrays.equals(y.toFloatArray(), doubled(v));
        }
    }

    /** {@return each of {@code v} times two} */
    static float[] doubled(float[] v) {
        float[] d = v.clone();
        for (int i = 0; i < d.length; i++) {
            d[i] *= 2;
        }
        return d;
    }

    static String pyString(String s) {
        return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
    }
}
