package io.github.dlpack4j.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code dlpack4j bench}: the import and export exchanges of dlpack4j-bench in a form users can run,
 * each figure beside the same exchange done in Python alone, timed in the same process.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {"Times each exchange between Java and numpy / torch on float32 tensors of each size, beside",
                "the same exchange done in Python alone in this process (timeit), and prints the ratios; with",
                "ONNX Runtime on the class path and onnxruntime in Python, also a Java tensor given to ORT Java; with",
                "Pillow, a Java image as a tensor beside numpy.asarray of a PIL image. A copy",
                "of the data is timed too, for scale: a zero-copy exchange costs the same at every size.",
                "Uses the Python of -Ddlpack4j.python, else DLPACK4J_PYTHON, else python3 (numpy and torch needed)."})
final class BenchCommand implements Callable<Integer> {
    /** 1 element (4 bytes) to 256 MiB, 16x apart but for the first step. */
    static final List<Long> DEFAULT_SIZES = List.of(4L, 1L << 10, 1L << 14, 1L << 20, 1L << 24, 1L << 28);
    static final List<Long> QUICK_SIZES = List.of(4L, 1L << 20);

    @Spec
    CommandSpec spec;

    @Option(names = "--quick", description = "two sizes (4 B, 1 MiB), short timings: seconds, for CI and a first look")
    boolean quick;

    @Option(names = "--sizes", split = ",", paramLabel = "SIZE", converter = SizeConverter.class,
            description = "tensor sizes in bytes, e.g. 4,1KiB,1MiB,256MiB (default: 4 B to 256 MiB, 16x apart)")
    List<Long> sizes;

    @Option(names = "--chart", paramLabel = "FILE", description = "also draw cost against size into FILE (.svg or .png)")
    Path chart;

    @Option(names = "--json", description = "print the figures as JSON instead of a table")
    boolean json;

    /** One figure of {@code --json}. */
    record Row(String exchange, String javaSide, String pythonBaseline, long bytes, double javaNs, double pythonNs, double ratio) {}

    @Override
    public Integer call() throws IOException {
        if (chart != null) {
            BenchChart.check(chart);
        }
        List<Long> todo = sizes != null ? sizes : quick ? QUICK_SIZES : DEFAULT_SIZES;
        double seconds = quick ? 0.05 : 0.5;
        double warmUp = quick ? 2 : 5; // at most, of the Java side, once per exchange
        Python py = Python.start();
        List<Exchange.Timing> timings = new ArrayList<>();
        try (PyObject helpers = PythonSetup.helpers(py)) {
            List<Exchange> exchanges = new ArrayList<>();
            for (Exchange e : Exchange.values()) {
                List<String> missing = e.modules().stream().filter(m -> !PythonSetup.installed(helpers, m)).toList();
                if (e.isOptional() && (!missing.isEmpty() || e == Exchange.ORT_TAKES_JAVA && !Doctor.ortPresent())) {
                    spec.commandLine().getErr().println("(no \"" + e.javaLabel + "\" rows: " + (missing.isEmpty()
                            ? "ONNX Runtime Java is not on the class path" : missing + " not installed") + ")");
                } else if (!missing.isEmpty()) {
                    throw new IllegalStateException(missing.get(0) + " is not installed in " + py.executable() + ": "
                            + PythonSetup.HOW_TO);
                } else {
                    exchanges.add(e);
                }
            }
            ProgressBar bar = new ProgressBar(spec.commandLine().getErr(), exchanges.size() * todo.size());
            for (Exchange e : exchanges) {
                for (long bytes : todo) {
                    bar.step(e.javaLabel + ", " + bytes(bytes));
                    timings.add(e.time(py, helpers, Math.max(1, bytes / Float.BYTES), seconds, bytes == todo.get(0) ? warmUp : 0));
                }
            }
            bar.finish();
        }
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            printJson(timings, out);
        } else {
            printTable(timings, out, py);
            printDjl(todo, out);
        }
        if (chart != null) {
            BenchChart.write(timings, chart);
            if (!json) {
                out.println("chart: " + chart);
            }
        }
        return 0;
    }

    private static void printJson(List<Exchange.Timing> timings, PrintWriter out) throws JsonProcessingException {
        List<Row> rows = timings.stream().map(t -> new Row(t.exchange().name(), t.exchange().javaLabel,
                t.exchange().pythonLabel, t.bytes(), t.javaNs(), t.pythonNs(), t.ratio())).toList();
        out.println(DoctorCommand.JSON.writeValueAsString(rows));
    }

    private static void printTable(List<Exchange.Timing> timings, PrintWriter out, Python py) {
        out.println("dlpack4j bench: ns per exchange, each beside the same exchange in Python alone, in this process");
        out.println("(Python " + py.version().split(" ")[0] + ", " + py.executable() + "; medians of five rounds)");
        out.println();
        out.printf("%-34s %9s %10s   %-31s %10s %7s%n", "exchange", "size", "Java ns", "Python baseline", "Python ns", "ratio");
        for (Exchange.Timing t : timings) {
            out.printf(Locale.ROOT, "%-34s %9s %10.0f   %-31s %10.0f %6.2fx%n", t.exchange().javaLabel, bytes(t.bytes()),
                    t.javaNs(), t.exchange().pythonLabel, t.pythonNs(), t.ratio());
        }
        out.println();
        out.println(Exchange.ADVICE);
    }

    /**
     * DJL's rows, when dlpack4j-djl is on the class path: timed in a JVM of its own (DJL's libtorch
     * cannot load beside the torch this JVM imported), Java alone, as there is no Python side.
     */
    private void printDjl(List<Long> todo, PrintWriter out) {
        if (!DjlRow.present()) {
            spec.commandLine().getErr().println("(no DJL rows: dlpack4j-djl and DJL are not on the class path)");
            return;
        }
        List<String> args = new ArrayList<>(List.of("--time"));
        todo.forEach(b -> args.add(Long.toString(b)));
        Map<String, String> r = DjlRow.probe(args);
        out.println();
        if (!r.get("status").equals("ok")) {
            out.println("DJL: FAILED: " + r.get("error"));
            return;
        }
        out.println("DJL " + r.get("djl") + " (libtorch " + r.get("libtorch") + "), in a JVM of its own: ns per call + close");
        out.printf("%-34s %9s %10s%n", "exchange", "size", "Java ns");
        for (String line : r.getOrDefault("time", "").lines().toList()) {
            String[] f = line.split(",");
            out.printf("%-34s %9s %10s%n", "DjlTensors.of (NDArray as tensor)", bytes(Long.parseLong(f[0])), f[1]);
            out.printf("%-34s %9s %10s%n", "DjlTensors.toNDArray", bytes(Long.parseLong(f[0])), f[2]);
        }
    }

    /** {@code 4 B}, {@code 16 KiB}, {@code 256 MiB}: the size in the largest unit that divides it. */
    static String bytes(long n) {
        String[] units = {"B", "KiB", "MiB", "GiB"};
        int u = 0;
        while (u < units.length - 1 && n >= 1024 && n % 1024 == 0) {
            n /= 1024;
            u++;
        }
        return n + " " + units[u];
    }

    /** Parses {@code 4}, {@code 4B}, {@code 1KiB}, {@code 256MiB}, {@code 1GiB} (at least 4 bytes: one float32). */
    static final class SizeConverter implements picocli.CommandLine.ITypeConverter<Long> {
        private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*(B|KiB|MiB|GiB)?");

        @Override
        public Long convert(String value) {
            Matcher m = SIZE.matcher(value.strip());
            if (!m.matches()) {
                throw new picocli.CommandLine.TypeConversionException("'" + value + "' is not a size such as 4, 1KiB, 1MiB or 256MiB");
            }
            long n = Long.parseLong(m.group(1)) << switch (m.group(2) == null ? "B" : m.group(2)) {
                case "KiB" -> 10;
                case "MiB" -> 20;
                case "GiB" -> 30;
                default -> 0;
            };
            if (n < Float.BYTES) {
                throw new picocli.CommandLine.TypeConversionException("'" + value + "' is smaller than one float32 (4 bytes)");
            }
            return n;
        }
    }
}
