package io.github.dlpack4j.cli;

import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.model.ModelResult;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.SentenceTransformers;
import io.github.dlpack4j.python.ImportPath;
import io.github.dlpack4j.python.ImportRequest;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code dlpack4j demo}: a Java tensor through DLPack and back, then (with a usable Python) a torch
 * tensor and a NumPy array shared with Java, a Java tensor shared with numpy, torch and jax, the
 * route of each exchange, the cost of one exchange measured now, and (with sentence-transformers and
 * the model {@code scripts/minilm} makes) three sentences embedded in Java and their similarities.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {"Shows tensors crossing between Java and numpy, torch and jax without a copy: the same",
                "data address on both sides, writes seen by the other side, the route each exchange took, and",
                "what one exchange costs next to the same exchange in Python alone, measured now.",
                "Without a usable Python it shows the Java part and how to get the rest."})
final class DemoCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        out.println("dlpack4j demo: tensors shared through DLPack " + Main.dlpack());
        out.println();
        javaAlone(out);
        PythonSetup setup = PythonSetup.choose(null);
        Python py;
        try {
            py = Python.start();
        } catch (IllegalStateException e) {
            out.println();
            out.println("No usable Python (" + setup.executable() + ", chosen by " + setup.chosenBy() + "): " + Main.oneLine(e));
            out.println("To see tensors cross into numpy, torch and jax: " + PythonSetup.HOW_TO + ".");
            out.println("`dlpack4j doctor` checks a set-up and says what to fix.");
            return 0;
        }
        new WithPython(py, PythonSetup.helpers(py), out).run(setup);
        return 0;
    }

    /** Export, adopt, write, close: the ownership rules with no Python involved. */
    private static void javaAlone(PrintWriter out) {
        out.println("1. Java alone: a tensor exported as a DLManagedTensorVersioned and adopted back");
        MemorySegment ptr;
        long data;
        try (Tensor t = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
            data = t.dataPointer();
            ptr = Dlpack.exportVersioned(t);
            out.printf("   Tensor.of(1..6) float32 [2, 3], data at 0x%x; exported as DLManagedTensorVersioned* 0x%x%n",
                    data, ptr.address());
        }
        out.println("   the Java owner is closed: the export keeps the memory alive");
        try (ManagedTensor m = ManagedTensor.adoptVersioned(ptr)) {
            Tensor v = m.tensor();
            out.printf("   adopted back: DLPack %s, %s %s, data at 0x%x (%s)%n", m.version(), v.dtype(),
                    Arrays.toString(v.shape()), v.dataPointer(), v.dataPointer() == data ? "the same memory, no copy" : "MOVED");
        }
        out.printf("   closed: the deleter ran exactly once (live exports: %d, native bytes held: %d)%n",
                Dlpack.liveExports(), Dlpack.nativeBytesInUse());
    }

    /** The part that crosses into the embedded interpreter. */
    private record WithPython(Python py, PyObject helpers, PrintWriter out) {
        void run(PythonSetup setup) {
            out.println();
            out.println("Python " + py.version().split(" ")[0] + " embedded in this JVM: " + py.executable()
                    + " (chosen by " + setup.chosenBy() + ")");
            int step = 2;
            if (installed("torch")) {
                importIntoJava(step++, "torch tensor", "import torch\nt = torch.arange(6, dtype=torch.float32).reshape(2, 3)",
                        "t", "t.data_ptr()");
            } else {
                skipped(step++, "torch");
            }
            if (installed("numpy")) {
                importIntoJava(step++, "NumPy array", "import numpy\nt = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)",
                        "t", "t.ctypes.data");
                exportToPython(step++);
                cost(step++);
            } else {
                skipped(step++, "numpy");
            }
            embeddings(step);
        }

        /**
         * Strings in, embeddings out: a real sentence-embedding model (all-MiniLM-L6-v2, made by
         * {@code scripts/minilm}; its directory in {@code DLPACK4J_MINILM} or {@code -Ddlpack4j.minilm})
         * run by sentence-transformers in this JVM, three sentences' similarities computed in Java.
         */
        private void embeddings(int step) {
            out.println();
            String dir = System.getProperty("dlpack4j.minilm", System.getenv("DLPACK4J_MINILM"));
            if (!installed("sentence_transformers") || dir == null || !Files.isDirectory(Path.of(dir))) {
                out.printf("%d. Text embeddings: skipped (%s): scripts/demo makes all-MiniLM-L6-v2 with scripts/minilm"
                        + " and sets DLPACK4J_MINILM%n", step, !installed("sentence_transformers")
                        ? "sentence-transformers is not installed in " + py.executable() : "no model directory in DLPACK4J_MINILM");
                return;
            }
            out.printf("%d. Strings in, embeddings out: all-MiniLM-L6-v2 run by sentence-transformers in this JVM%n", step);
            List<String> sentences = List.of("A cat sits on the mat", "A kitten rests on a rug",
                    "The stock market fell sharply today");
            try (PythonModel model = SentenceTransformers.embeddings(Path.of(dir)).python(py).build()) {
                long start = System.nanoTime();
                try (ModelResult r = model.run(Map.of(SentenceTransformers.TEXT, sentences))) {
                    long micros = (System.nanoTime() - start) / 1_000;
                    Tensor e = r.tensor(SentenceTransformers.EMBEDDING);
                    float[] v = e.toFloatArray();
                    int dim = (int) e.shape()[1];
                    out.printf("   model.run(Map.of(\"text\", 3 sentences)): %s %s in %,d us, %s tokens%n", e.dtype(),
                            Arrays.toString(e.shape()), micros, r.values(SentenceTransformers.TOKENS));
                    for (int[] pair : new int[][] {{0, 1}, {0, 2}, {1, 2}}) {
                        out.printf("   cosine %-26s %-40s %.2f%n", quoted(sentences.get(pair[0])), quoted(sentences.get(pair[1])),
                                cosine(v, pair[0] * dim, pair[1] * dim, dim));
                    }
                }
            }
            out.println("   a cat and a kitten close, a stock market far: docs/text-models.md for LangChain4j and Spring AI");
        }

        private boolean installed(String module) {
            return PythonSetup.installed(helpers, module);
        }

        private void skipped(int step, String module) {
            out.println();
            out.printf("%d. %s is not installed in %s: skipped (%s)%n", step, module, py.executable(), PythonSetup.HOW_TO);
        }

        /** A Python tensor imported zero-copy, written in Java, printed by Python. */
        private void importIntoJava(int step, String what, String make, String name, String addressExpr) {
            out.println();
            out.printf("%d. A %s in Java, zero-copy%n", step, what);
            py.exec(make);
            try (PyObject t = py.getGlobal(name); PyObject pyAddress = py.eval(addressExpr)) {
                ImportRequest request = ImportRequest.of(t);
                try (ManagedTensor m = request.importTensor()) {
                    Tensor v = m.tensor();
                    out.printf("   Python  %-52s 0x%x%n", make.substring(make.indexOf('\n') + 1) + "; " + addressExpr, pyAddress.asLong());
                    out.printf("   Java    %-52s 0x%x  %s%n", "ImportRequest.of(t).importTensor(): " + v.dtype() + " "
                            + Arrays.toString(v.shape()), v.dataPointer(), same(v.dataPointer(), pyAddress.asLong()));
                    out.println("   route   " + routeText(request.path(), m.isVersioned()));
                    v.setDouble(42, 1, 2);
                    out.println("   Java sets [1, 2] = 42; Python prints " + name + ":");
                    try (PyObject shown = py.eval("repr(" + name + ")")) {
                        out.println(indent(shown.str(), 5));
                    }
                }
            }
        }

        /** A Java tensor consumed by numpy, torch and jax; numpy's write shows in Java. */
        private void exportToPython(int step) {
            out.println();
            out.printf("%d. A Java tensor in numpy, torch and jax, zero-copy%n", step);
            try (Tensor t = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3); PyObject jt = PythonDlpack.toPython(t)) {
                out.printf("   Java    %-52s 0x%x%n", "Tensor.of(1..6) float32 [2, 3]", t.dataPointer());
                py.setGlobal("jt", jt);
                for (String[] consumer : new String[][] {{"numpy", "numpy.from_dlpack"}, {"torch", "torch.from_dlpack"},
                        {"jax", "jax.dlpack.from_dlpack"}}) {
                    if (!installed(consumer[0])) {
                        out.printf("   %-7s not installed: skipped%n", consumer[0]);
                        continue;
                    }
                    py.exec("import " + consumer[0] + ", dlpack4j_cli\ntraced = dlpack4j_cli.Traced(jt)\n"
                            + "y_" + consumer[0] + " = " + consumer[1] + "(traced)");
                    try (PyObject address = py.eval("dlpack4j_cli.address(y_" + consumer[0] + ")");
                         PyObject route = py.eval("traced.route()")) {
                        long a = address.isNone() ? 0 : address.asLong();
                        out.printf("   Python  %-52s 0x%x  %s%n", consumer[1] + "(jt)", a, same(a, t.dataPointer()));
                        out.println("           route: " + route.str());
                    }
                }
                py.exec("y_numpy[0, 0] = -1");
                out.printf("   Python sets y_numpy[0, 0] = -1; Java reads t[0, 0] = %s%n", t.getDouble(0, 0));
                py.exec("del jt, traced" + (installed("torch") ? ", y_torch" : "") + (installed("jax") ? ", y_jax" : "") + ", y_numpy");
            }
        }

        /** The cost of one exchange each way next to Python's own, measured now. */
        private void cost(int step) {
            out.println();
            out.printf("%d. One exchange, timed now in this process after a warm-up (`dlpack4j bench` for more)%n", step);
            for (Exchange e : new Exchange[] {Exchange.JAVA_IMPORTS_NUMPY, Exchange.JAVA_IMPORTS_NUMPY_IN_SCOPE,
                    Exchange.NUMPY_IMPORTS_JAVA}) {
                Exchange.Timing timing = e.time(py, helpers, 1000, 0.5, 3);
                out.printf("   %-32s %8.0f ns   Python: %-28s %8.0f ns   ratio %.2fx%n", e.javaLabel, timing.javaNs(),
                        e.pythonLabel, timing.pythonNs(), timing.ratio());
            }
            out.println("   " + Exchange.ADVICE);
        }
    }

    /** What the route of an import means, and which struct arrived. */
    static String routeText(ImportPath path, boolean versioned) {
        String struct = versioned ? "DLManagedTensorVersioned" : "legacy DLManagedTensor";
        return switch (path) {
            case CAPSULE -> "CAPSULE: a DLPack capsule, consumed as it was (" + struct + ")";
            case EXCHANGE_API -> "EXCHANGE_API: the type's DLPack C Exchange API table, no __dlpack__ call, no capsule ("
                    + struct + ")";
            case DLPACK -> "DLPACK: __dlpack__(max_version=(1, 3)) gave a " + struct;
            case DLPACK_LEGACY_RETRY -> "DLPACK_LEGACY_RETRY: __dlpack__ refused max_version, called again without it ("
                    + struct + ")";
        };
    }

    private static String quoted(String s) {
        return "\"" + s + "\"";
    }

    /** {@return the cosine of rows at {@code a} and {@code b} of {@code v}, {@code n} elements each} */
    private static double cosine(float[] v, int a, int b, int n) {
        double dot = 0;
        double na = 0;
        double nb = 0;
        for (int i = 0; i < n; i++) {
            dot += (double) v[a + i] * v[b + i];
            na += (double) v[a + i] * v[a + i];
            nb += (double) v[b + i] * v[b + i];
        }
        return dot / Math.sqrt(na * nb);
    }

    private static String same(long a, long b) {
        return a == b ? "the same address" : "a DIFFERENT address (a copy)";
    }

    private static String indent(String s, int n) {
        String pad = " ".repeat(n);
        return pad + s.replace("\n", "\n" + pad);
    }
}
