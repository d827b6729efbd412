package io.github.dlpack4j.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.github.dlpack4j.cli.DoctorReport.DtypeRow;
import io.github.dlpack4j.cli.DoctorReport.Library;
import io.github.dlpack4j.cli.DoctorReport.Outcome;
import io.github.dlpack4j.cli.DoctorReport.Problem;
import io.github.dlpack4j.cli.DoctorReport.Protocol;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code dlpack4j doctor}: what works in this set-up, tried for real, and the fix for what does not. */
@Command(name = "doctor", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {"Checks the JVM's native access and the Python that dlpack4j embeds, then tries each DLPack",
                "library installed there (numpy, torch, jax, tensorflow, pyarrow, cupy and any --module): which",
                "__dlpack__ keywords it accepts, which capsules it returns, its C Exchange API, what it does with",
                "read-only data, and for each DLPack dtype whether it goes library -> Java and Java -> library."},
        footerHeading = "%nExit codes:%n",
        footer = {"  0  every check passed", "  1  a check failed: each is listed with its fix",
                "  2  a command line that could not be understood",
                "%nThe JSON layout (--json) is described by docs/doctor.schema.json."})
final class DoctorCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--python", paramLabel = "EXE",
            description = "the Python executable to embed (default: -Ddlpack4j.python, else DLPACK4J_PYTHON, else python3)")
    String python;

    @Option(names = "--json", description = "print the report as JSON")
    boolean json;

    @Option(names = "--module", paramLabel = "M", description = "also try this module (repeatable); it must be installed")
    List<String> modules = new ArrayList<>();

    @Override
    public Integer call() throws JsonProcessingException {
        DoctorReport report = Doctor.examine(PythonSetup.choose(python), modules);
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            out.println(JSON.writeValueAsString(report));
        } else {
            printText(report, out);
        }
        return report.ok() ? 0 : Main.FAILED;
    }

    static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private static void printText(DoctorReport r, PrintWriter out) {
        out.println("dlpack4j doctor (dlpack4j " + Main.projectVersion() + ", DLPack " + Main.dlpack() + ")");
        out.println();
        out.printf("JDK      %s (%s) at %s, on the %s%n", r.jdk().version(), r.jdk().vendor(), r.jdk().home(),
                r.jdk().modulePath() ? "module path" : "class path");
        out.printf("         native access: %s%n", join(r.jdk().nativeAccess(), v -> v ? "enabled" : "DISABLED"));
        var p = r.python();
        out.printf("Python   %s (chosen by %s)%n", p.executable(), p.chosenBy());
        if (p.embedded()) {
            out.printf("         %s%n         libpython %s (%s), embedded in this JVM%n", p.version(), p.libpython(),
                    Boolean.TRUE.equals(p.shared()) ? "shared" : "not a shared build");
        }
        List<Library> usable = r.libraries().stream().filter(l -> l.status().equals("ok")).toList();
        if (!r.libraries().isEmpty()) {
            out.println();
            out.println("DLPack libraries in this interpreter (each tried for real):");
            for (Library l : r.libraries()) {
                out.printf("  %-10s %s%n", l.name(), switch (l.status()) {
                    case "ok" -> l.version();
                    case "not-installed" -> "not installed";
                    default -> "IMPORT FAILED: " + l.error();
                });
            }
        }
        for (Library l : usable) {
            Protocol pr = l.protocol();
            out.println();
            out.printf("%s %s%n", l.name(), l.version());
            out.printf("  __dlpack__ keywords   %s%n", join(pr.keywords(), v -> v.startsWith("accepted") ? "yes" : "no"));
            out.printf("  capsules              %s; with max_version=(1, 3): %s%n", pr.capsule(),
                    pr.versionedCapsule() == null ? "refused" : pr.versionedCapsule());
            out.printf("  C Exchange API        %s%n", pr.exchangeApi() == null ? "none"
                    : pr.exchangeApi() + (pr.exchangeApiVersion() == null ? ", not usable by Java" : ", table version " + pr.exchangeApiVersion()));
            out.printf("  Java's import         %s%n", pr.javaImportRoute().detail());
            out.printf("  read-only to Java     %s: %s%n", pr.readOnlyToJava().result(), pr.readOnlyToJava().detail());
            out.printf("  read-only from Java   %s: %s%n", pr.readOnlyFromJava().result(), pr.readOnlyFromJava().detail());
        }
        if (!usable.isEmpty()) {
            out.println();
            out.println("dtypes: library -> Java / Java -> library (yes, no, - where the library has no such dtype;");
            out.println("the reasons are in --json)");
            StringBuilder head = new StringBuilder(String.format("  %-20s", "dtype"));
            usable.forEach(l -> head.append(String.format(" %-9s", l.name())));
            out.println(head);
            for (int i = 0; i < Doctor.DTYPES.size(); i++) {
                StringBuilder line = new StringBuilder(String.format("  %-20s", Doctor.DTYPES.get(i)));
                for (Library l : usable) {
                    DtypeRow row = l.dtypes().get(i);
                    line.append(String.format(" %-9s", cell(row.toJava()) + "/" + cell(row.fromJava())));
                }
                out.println(line.toString().stripTrailing());
            }
        }
        printOnnxRuntime(r.onnxRuntime(), out);
        printImages(r.images(), out);
        printDjl(r.djl(), out);
        out.println();
        if (r.problems().isEmpty()) {
            out.println("Every check passed.");
        } else {
            out.println(r.problems().size() + (r.problems().size() == 1 ? " check failed:" : " checks failed:"));
            for (Problem pb : r.problems()) {
                out.printf("  %s: %s%n    fix: %s%n", pb.check(), pb.message(), pb.fix());
            }
        }
    }

    private static void printDjl(DoctorReport.Djl djl, PrintWriter out) {
        switch (djl.status()) {
            case "absent" -> out.println("DJL: not on the class path (optional: add dlpack4j-djl)");
            case "error" -> out.println("DJL: FAILED: " + djl.error());
            default -> out.printf("DJL %s, libtorch %s (dlpack4j-djl, in a JVM of its own): arrays as tensors %s, "
                            + "tensors as arrays %s%n", djl.djlVersion(), djl.libtorchVersion(),
                    Boolean.TRUE.equals(djl.ofZeroCopy()) ? "over libtorch's memory" : "COPIED",
                    Boolean.TRUE.equals(djl.toNDArrayZeroCopy()) ? "over the tensor's memory" : "COPIED");
        }
    }

    private static void printOnnxRuntime(DoctorReport.OnnxRuntime ort, PrintWriter out) {
        out.println();
        switch (ort.status()) {
            case "absent" -> out.println("ONNX Runtime Java: not on the class path (optional: add dlpack4j-onnxruntime)");
            case "error" -> out.println("ONNX Runtime Java: FAILED: " + ort.error());
            default -> {
                out.printf("ONNX Runtime Java %s (dlpack4j-onnxruntime): inputs without a copy, outputs %s%n",
                        ort.version(), Boolean.TRUE.equals(ort.outputsZeroCopy()) ? "over ORT's memory" : "COPIED");
                List<String> both = new ArrayList<>();
                List<String> oneWay = new ArrayList<>();
                for (DtypeRow row : ort.dtypes()) {
                    boolean in = row.fromJava().result().equals("yes");
                    boolean back = row.toJava().result().equals("yes");
                    if (in && back) {
                        both.add(row.dtype());
                    } else if (in || back) {
                        oneWay.add(row.dtype() + (in ? " (Java -> ORT only)" : " (ORT -> Java only)"));
                    }
                }
                out.println("  dtypes both ways: " + String.join(", ", both));
                if (!oneWay.isEmpty()) {
                    out.println("  one way only: " + String.join(", ", oneWay));
                }
                out.println("  no others (the reasons are in --json)");
            }
        }
    }

    private static void printImages(DoctorReport.Images images, PrintWriter out) {
        out.println();
        if (!images.status().equals("ok")) {
            out.println("Images (dlpack4j-image): FAILED: " + images.error());
            return;
        }
        out.println("Images (dlpack4j-image): ImageIO reads " + String.join(", ", images.readers()));
        List<String> both = new ArrayList<>();
        List<String> failed = new ArrayList<>();
        for (DoctorReport.LayoutRow row : images.layouts()) {
            boolean ok = row.toTensor().result().equals("yes") && row.fromTensor().result().equals("yes");
            (ok ? both : failed).add(row.layout());
        }
        out.println("  layouts to a tensor (one copy) and back (an image over the tensor): " + String.join(", ", both));
        if (!failed.isEmpty()) {
            out.println("  FAILED: " + String.join(", ", failed) + " (the reasons are in --json)");
        }
        out.println("  files read into tensors: " + join(images.files(), DoctorCommand::cell));
    }

    private static String cell(Outcome o) {
        return o.result().equals("n/a") ? "-" : o.result();
    }

    private static <V> String join(Map<String, V> map, Function<V, String> show) {
        List<String> parts = new ArrayList<>();
        map.forEach((k, v) -> parts.add(k + " " + show.apply(v)));
        return String.join(", ", parts);
    }
}
