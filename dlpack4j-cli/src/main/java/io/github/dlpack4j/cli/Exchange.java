package io.github.dlpack4j.cli;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.image.ImageTensors;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import java.awt.image.BufferedImage;
import java.util.Arrays;
import java.util.List;
import java.util.function.DoubleUnaryOperator;

/**
 * The exchanges that {@code bench} times (and {@code demo} once), each beside the same exchange done
 * in Python alone, timed in this process: a Java figure and its Python baseline make a ratio that the
 * machine's speed of the moment cancels out of.
 */
enum Exchange {
    JAVA_IMPORTS_NUMPY("Java imports a numpy array", "numpy.from_dlpack(ndarray)"),
    JAVA_IMPORTS_NUMPY_IN_SCOPE("the same in a GIL scope (numpy)", "numpy.from_dlpack(ndarray)"),
    JAVA_IMPORTS_TORCH("Java imports a torch tensor", "numpy.from_dlpack(torch tensor)"),
    JAVA_IMPORTS_TORCH_IN_SCOPE("the same in a GIL scope (torch)", "numpy.from_dlpack(torch tensor)"),
    NUMPY_IMPORTS_JAVA("numpy.from_dlpack(Java tensor)", "numpy.from_dlpack(ndarray)"),
    TORCH_IMPORTS_JAVA("torch.from_dlpack(Java tensor)", "torch.from_dlpack(ndarray)"),
    ORT_TAKES_JAVA("ORT Java takes a Java tensor", "OrtValue.ortvalue_from_numpy(ndarray)"),
    IMAGE_TO_TENSOR("ImageTensors.of(4BYTE_ABGR image)", "numpy.asarray(PIL RGBA image)"),
    COPY("Tensor.copy() (a copy, for scale)", "ndarray.copy()");

    final String javaLabel;
    final String pythonLabel;

    Exchange(String javaLabel, String pythonLabel) {
        this.javaLabel = javaLabel;
        this.pythonLabel = pythonLabel;
    }

    /** The Python modules this exchange needs. */
    List<String> modules() {
        return switch (this) {
            case JAVA_IMPORTS_TORCH, JAVA_IMPORTS_TORCH_IN_SCOPE, TORCH_IMPORTS_JAVA -> List.of("numpy", "torch");
            case ORT_TAKES_JAVA -> List.of("numpy", "onnxruntime");
            case IMAGE_TO_TENSOR -> List.of("numpy", "PIL");
            default -> List.of("numpy");
        };
    }

    /** {@return whether bench leaves this exchange out, rather than failing, where its runtime is missing} */
    boolean isOptional() {
        return this == ORT_TAKES_JAVA || this == IMAGE_TO_TENSOR; // ONNX Runtime, Java's and Python's, and Pillow are optional
    }

    /**
     * What a program should take from the two import rows: one call takes and drops the GIL itself;
     * a loop of imports inside one {@code withGil} scope pays for the GIL once.
     */
    static final String ADVICE = "A loop of imports (a request loop, a batch) should hold the GIL once for all of them: "
            + "py.withGil(() -> ...).";

    /** One timing: ns per exchange, Java's way and Python's, each the median of its rounds. */
    record Timing(Exchange exchange, long bytes, double javaNs, double pythonNs) {
        double ratio() {
            return javaNs / pythonNs;
        }
    }

    /**
     * Times this exchange on float32 tensors of {@code elements} elements (an image: as many pixels
     * of four bytes, as square as powers of two make it), about {@code seconds} per side, after
     * warming the Java side up for at most {@code warmUp} seconds.
     */
    Timing time(Python py, PyObject helpers, long elements, double seconds, double warmUp) {
        int height = 1;
        while ((long) height * height * 4 <= elements && elements % (2L * height) == 0) {
            height *= 2;
        }
        int width = (int) (elements / height);
        BufferedImage image = this == IMAGE_TO_TENSOR ? new BufferedImage(width, height, BufferedImage.TYPE_4BYTE_ABGR) : null;
        try (Tensor java = Tensor.zeros(DataType.FLOAT32, elements);
             PyObject javaInPython = PythonDlpack.toPython(java);
             PyObject numpy = py.importModule("numpy");
             PyObject ndarray = numpy.callMethod("zeros", elements, "float32");
             PyObject numpyFromDlpack = numpy.attr("from_dlpack");
             PyObject torch = modules().contains("torch") ? py.importModule("torch") : null;
             PyObject tensor = torch != null ? torch.callMethod("zeros", elements) : null;
             PyObject torchFromDlpack = torch != null ? torch.attr("from_dlpack") : null;
             PyObject copy = py.eval("lambda a: a.copy()");
             PyObject ortFromNumpy = this == ORT_TAKES_JAVA
                     ? py.eval("__import__('onnxruntime').OrtValue.ortvalue_from_numpy") : null;
             PyObject pilImage = image != null
                     ? py.eval("__import__('PIL.Image').Image.new('RGBA', (" + width + ", " + height + "))") : null;
             PyObject asarray = numpy.attr("asarray")) {
            DoubleUnaryOperator javaSide = switch (this) {
                case JAVA_IMPORTS_NUMPY -> s -> timeJava(() -> PythonDlpack.fromDlpack(ndarray).close(), s);
                case JAVA_IMPORTS_NUMPY_IN_SCOPE -> s -> py.withGil(() -> timeJava(() -> PythonDlpack.fromDlpack(ndarray).close(), s));
                case JAVA_IMPORTS_TORCH -> s -> timeJava(() -> PythonDlpack.fromDlpack(tensor).close(), s);
                case JAVA_IMPORTS_TORCH_IN_SCOPE -> s -> py.withGil(() -> timeJava(() -> PythonDlpack.fromDlpack(tensor).close(), s));
                case NUMPY_IMPORTS_JAVA -> s -> timePython(helpers, numpyFromDlpack, javaInPython, s);
                case TORCH_IMPORTS_JAVA -> s -> timePython(helpers, torchFromDlpack, javaInPython, s);
                case ORT_TAKES_JAVA -> s -> timeJava(() -> OrtProbe.giveAndClose(java), s);
                case IMAGE_TO_TENSOR -> s -> timeJava(() -> ImageTensors.of(image).close(), s);
                case COPY -> s -> timeJava(() -> java.copy().close(), s);
            };
            DoubleUnaryOperator pythonSide = switch (this) {
                case JAVA_IMPORTS_NUMPY, JAVA_IMPORTS_NUMPY_IN_SCOPE, NUMPY_IMPORTS_JAVA ->
                        s -> timePython(helpers, numpyFromDlpack, ndarray, s);
                case JAVA_IMPORTS_TORCH, JAVA_IMPORTS_TORCH_IN_SCOPE -> s -> timePython(helpers, numpyFromDlpack, tensor, s);
                case TORCH_IMPORTS_JAVA -> s -> timePython(helpers, torchFromDlpack, ndarray, s);
                case ORT_TAKES_JAVA -> s -> timePython(helpers, ortFromNumpy, ndarray, s);
                case IMAGE_TO_TENSOR -> s -> timePython(helpers, asarray, pilImage, s);
                case COPY -> s -> timePython(helpers, copy, ndarray, s);
            };
            warm(javaSide, warmUp);
            return new Timing(this, elements * Float.BYTES, javaSide.applyAsDouble(seconds), pythonSide.applyAsDouble(seconds));
        }
    }

    /**
     * Runs {@code side} in rounds of 0.1 s for at least half of {@code seconds}, then until two rounds
     * in a row agree within 15%, for at most {@code seconds}: until the JIT has compiled it.
     * Interpreted, an exchange is up to 100x slower (the FFM calls), and rounds of slow calls can
     * agree with each other: compiled after one to two seconds of calls here.
     */
    private static void warm(DoubleUnaryOperator side, double seconds) {
        long start = System.nanoTime();
        long least = start + (long) (seconds * 0.5e9);
        long end = start + (long) (seconds * 1e9);
        double last = Double.NaN;
        while (System.nanoTime() < end) {
            double now = side.applyAsDouble(0.1);
            if (System.nanoTime() > least && Math.abs(now - last) < 0.15 * last) {
                return;
            }
            last = now;
        }
    }

    /** Runs {@code op} for about {@code seconds}: first a calibration, then five rounds; the median ns per op. */
    static double timeJava(Runnable op, double seconds) {
        long n = 1;
        long took;
        do { // calibrate: double the count until one batch takes 10 ms (it warms the code up too)
            took = batch(op, n);
            n *= 2;
        } while (took < 10_000_000L && n < (1L << 40));
        long perRound = Math.max(1, (long) (n / 2 * (seconds * 1e9 / 5) / Math.max(took, 1)));
        double[] rounds = new double[5];
        for (int i = 0; i < rounds.length; i++) {
            rounds[i] = (double) batch(op, perRound) / perRound;
        }
        return median(rounds);
    }

    private static long batch(Runnable op, long n) {
        long start = System.nanoTime();
        for (long i = 0; i < n; i++) {
            op.run();
        }
        return System.nanoTime() - start;
    }

    /** ns per {@code fn(arg)} timed by {@code timeit} inside the interpreter: the median of five rounds. */
    static double timePython(PyObject helpers, PyObject fn, PyObject arg, double seconds) {
        try (PyObject rounds = helpers.callMethod("time_call", fn, arg, seconds)) {
            List<?> ns = (List<?>) rounds.toJava();
            return median(ns.stream().mapToDouble(v -> ((Number) v).doubleValue()).toArray());
        }
    }

    private static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v[v.length / 2];
    }
}
