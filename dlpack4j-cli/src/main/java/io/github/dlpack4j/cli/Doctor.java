package io.github.dlpack4j.cli;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.DlpackException;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.cli.DoctorReport.DtypeRow;
import io.github.dlpack4j.cli.DoctorReport.Jdk;
import io.github.dlpack4j.cli.DoctorReport.Library;
import io.github.dlpack4j.cli.DoctorReport.OnnxRuntime;
import io.github.dlpack4j.cli.DoctorReport.Outcome;
import io.github.dlpack4j.cli.DoctorReport.Problem;
import io.github.dlpack4j.cli.DoctorReport.Protocol;
import io.github.dlpack4j.cli.DoctorReport.PythonInfo;
import io.github.dlpack4j.python.ExchangeApi;
import io.github.dlpack4j.python.ImportRequest;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import io.github.dlpack4j.python.PythonException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The checks of {@code dlpack4j doctor}, each tried for real: the JVM's native access, the embedded
 * interpreter, and for each DLPack library its {@code __dlpack__} keywords, capsules, exchange API,
 * read-only handling and a dtype matrix in both directions. Nothing here throws for a broken set-up:
 * each failed check becomes a {@link Problem} with its fix.
 */
final class Doctor {
    /** Every scalar DLPack 1.3 dtype, in the order the matrix shows them. */
    static final List<DataType> DTYPES = List.of(DataType.BOOL, DataType.INT8, DataType.INT16, DataType.INT32,
            DataType.INT64, DataType.UINT8, DataType.UINT16, DataType.UINT32, DataType.UINT64, DataType.FLOAT16,
            DataType.BFLOAT16, DataType.FLOAT32, DataType.FLOAT64, DataType.COMPLEX64, DataType.COMPLEX128,
            DataType.FLOAT8_E3M4, DataType.FLOAT8_E4M3, DataType.FLOAT8_E4M3B11FNUZ, DataType.FLOAT8_E4M3FN,
            DataType.FLOAT8_E4M3FNUZ, DataType.FLOAT8_E5M2, DataType.FLOAT8_E5M2FNUZ, DataType.FLOAT8_E8M0FNU,
            DataType.FLOAT6_E2M3FN, DataType.FLOAT6_E3M2FN, DataType.FLOAT4_E2M1FN);

    private final List<Problem> problems = new ArrayList<>();

    /** Runs every check; {@code extraModules} are probed after the known libraries and must be installed. */
    static DoctorReport examine(PythonSetup setup, List<String> extraModules) {
        return new Doctor().run(setup, extraModules);
    }

    private DoctorReport run(PythonSetup setup, List<String> extraModules) {
        Jdk jdk = jdk();
        PythonInfo info = new PythonInfo(setup.executable(), setup.chosenBy(), false, null, null, null);
        List<Library> libraries = new ArrayList<>();
        if (!jdk.nativeAccess().containsValue(false)) {
            try {
                Python py = Python.start();
                try (PyObject helpers = PythonSetup.helpers(py)) {
                    info = pythonInfo(py, helpers, setup);
                    Set<String> names = new LinkedHashSet<>(namesOf(helpers));
                    Map<String, Boolean> installed = new HashMap<>();
                    for (String m : extraModules) {
                        if (names.add(m) && !installed.computeIfAbsent(m, x -> PythonSetup.installed(helpers, x))) {
                            problems.add(new Problem("library " + m, m + " is not installed in " + py.executable(),
                                    py.executable() + " -m pip install " + m));
                        }
                    }
                    for (String name : names) {
                        libraries.add(library(py, helpers, name,
                                installed.computeIfAbsent(name, x -> PythonSetup.installed(helpers, x))));
                    }
                }
            } catch (IllegalStateException e) {
                problems.add(new Problem("python", Main.oneLine(e), PythonSetup.HOW_TO));
            }
        }
        OnnxRuntime ort = ortPresent() ? OrtProbe.examine(DTYPES) : OnnxRuntime.absent();
        if (ort.status().equals("error")) {
            problems.add(new Problem("onnxruntime", "ONNX Runtime Java is on the class path but failed: " + ort.error(),
                    "use com.microsoft.onnxruntime:onnxruntime 1.26 (its jar carries the native library), or leave it out"));
        }
        DoctorReport.Images images = ImageProbe.examine();
        if (!images.status().equals("ok") || images.layouts().stream()
                .anyMatch(row -> !row.toTensor().result().equals("yes") || !row.fromTensor().result().equals("yes"))
                || images.files().values().stream().anyMatch(o -> !o.result().equals("yes"))) {
            problems.add(new Problem("images", "Java images did not all become tensors and back (the rows are in --json)",
                    "run a JDK with the java.desktop module and its ImageIO plugins (a full JDK, or a jlink image with java.desktop)"));
        }
        DoctorReport.Djl djl = DjlRow.examine();
        if (djl.status().equals("error")) {
            problems.add(new Problem("djl", "DJL is on the class path but failed: " + djl.error(),
                    "use dlpack4j-djl with its DJL 0.36 and libtorch 2.7.1 artifacts, or leave it out (docs/djl.md)"));
        }
        return new DoctorReport(DoctorReport.SCHEMA_VERSION, problems.isEmpty(), jdk, info, libraries, ort, images, djl,
                List.copyOf(problems));
    }

    /**
     * {@return whether dlpack4j-onnxruntime and ORT Java are here} Optional at run time: on the module
     * path they are resolved only when asked for ({@code --add-modules io.github.dlpack4j.onnxruntime}).
     * Names no ORT class, so that this class loads without them.
     */
    static boolean ortPresent() {
        Module self = Doctor.class.getModule();
        if (self.isNamed()) {
            return self.getLayer() != null && self.getLayer().findModule("io.github.dlpack4j.onnxruntime").isPresent();
        }
        try {
            Class.forName("ai.onnxruntime.OrtEnvironment", false, Doctor.class.getClassLoader());
            Class.forName("io.github.dlpack4j.onnxruntime.OrtTensors", false, Doctor.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    private Jdk jdk() {
        Map<String, Boolean> access = new LinkedHashMap<>();
        for (Class<?> c : new Class<?>[] {Tensor.class, Python.class}) {
            Module m = c.getModule();
            access.put(m.isNamed() ? m.getName() : "ALL-UNNAMED", m.isNativeAccessEnabled());
        }
        boolean named = Python.class.getModule().isNamed();
        if (access.containsValue(false)) {
            problems.add(new Problem("jdk", "native access is not enabled for " + access.keySet()
                    + ": dlpack4j cannot call libpython",
                    "start the JVM with --enable-native-access=" + String.join(",", access.keySet())
                            + (named ? "" : " (or use the executable jar, whose manifest enables it)")));
        }
        return new Jdk(Runtime.version().toString(), System.getProperty("java.vendor"), System.getProperty("java.home"),
                named, access);
    }

    private static PythonInfo pythonInfo(Python py, PyObject helpers, PythonSetup setup) {
        try (PyObject lib = helpers.callMethod("libpython");
             PyObject shared = py.eval("bool(__import__('sysconfig').get_config_var('Py_ENABLE_SHARED'))")) {
            return new PythonInfo(py.executable(), setup.chosenBy(), true, py.version().replace('\n', ' '),
                    lib.isNone() ? null : lib.str(), shared.asBoolean());
        }
    }

    private static List<String> namesOf(PyObject helpers) {
        try (PyObject names = helpers.attr("LIBRARIES")) {
            return ((List<?>) names.toJava()).stream().map(String::valueOf).toList();
        }
    }

    private Library library(Python py, PyObject helpers, String name, boolean installed) {
        if (!installed) {
            return new Library(name, "not-installed", null, null, null, List.of());
        }
        PyObject adapter;
        try {
            adapter = helpers.callMethod("adapter", name);
        } catch (PythonException e) {
            String error = Main.oneLine(e);
            problems.add(new Problem("library " + name, "import " + name + " failed: " + error,
                    "see the whole error with: " + py.executable() + " -c 'import " + name + "'; then repair or reinstall it: "
                            + py.executable() + " -m pip install --force-reinstall " + name));
            return new Library(name, "import-error", null, error, null, List.of());
        }
        try (adapter; PyObject version = adapter.attr("version")) {
            List<DtypeRow> rows = new ArrayList<>();
            for (DataType t : DTYPES) {
                rows.add(new DtypeRow(t.toString(), toJava(helpers, adapter, t), fromJava(helpers, adapter, t)));
            }
            return new Library(name, "ok", version.str(), null, protocol(helpers, adapter), rows);
        }
    }

    private static Protocol protocol(PyObject helpers, PyObject adapter) {
        Map<String, String> keywords = new LinkedHashMap<>();
        try (PyObject k = helpers.callMethod("keywords", adapter)) {
            ((Map<?, ?>) k.toJava()).forEach((key, value) -> keywords.put(String.valueOf(key), String.valueOf(value)));
        }
        List<?> capsules;
        try (PyObject c = helpers.callMethod("capsule_kinds", adapter)) {
            capsules = (List<?>) c.toJava();
        }
        String attribute;
        try (PyObject a = helpers.callMethod("exchange_api_attribute", adapter)) {
            attribute = a.isNone() ? null : a.str();
        }
        String tableVersion;
        Outcome route;
        try (PyObject sample = helpers.callMethod("sample", adapter, "float32")) {
            tableVersion = ExchangeApi.fromObject(sample).map(api -> api.version().toString()).orElse(null);
            ImportRequest request = ImportRequest.of(sample);
            try (ManagedTensor m = request.importTensor()) {
                route = Outcome.yes(DemoCommand.routeText(request.path(), m.isVersioned()));
            } catch (PythonException | DlpackException e) {
                route = Outcome.no(Main.oneLine(e));
            }
        }
        return new Protocol(keywords, (String) capsules.get(0), (String) capsules.get(1), attribute, tableVersion,
                route, readOnlyToJava(helpers, adapter), readOnlyFromJava(helpers, adapter));
    }

    /** What Java makes of an array that the library itself will not let anyone write. */
    private static Outcome readOnlyToJava(PyObject helpers, PyObject adapter) {
        try (PyObject ro = adapter.callMethod("readonly")) {
            if (ro.isNone()) {
                return Outcome.notApplicable("the library has no read-only arrays");
            }
            try (PyObject exported = adapter.callMethod("producer", ro); ManagedTensor m = PythonDlpack.fromDlpack(exported)) {
                return m.tensor().isReadOnly() ? Outcome.yes("Java imports it read-only (READ_ONLY flag set)")
                        : Outcome.no("Java imports it WRITABLE: no READ_ONLY flag"
                                + (m.isVersioned() ? "" : " (a legacy DLManagedTensor has no flags)"));
            } catch (PythonException | DlpackException e) {
                return Outcome.no("export failed: " + Main.oneLine(e));
            }
        }
    }

    /** What the library does with a read-only Java tensor: refuse it, import it read-only, copy it, or write into it. */
    private static Outcome readOnlyFromJava(PyObject helpers, PyObject adapter) {
        try (Tensor t = Tensor.of(new float[] {1, 1, 1}); PyObject jt = PythonDlpack.toPython(t.readOnly());
             PyObject result = helpers.callMethod("write_into", adapter, jt)) {
            String r = result.str();
            if (!r.equals("wrote")) {
                return Outcome.yes(r);
            }
            return t.getDouble(0) == 7 ? Outcome.no("it WROTE into the read-only Java memory")
                    : Outcome.yes("it imported a copy: its writes stay in the copy");
        } catch (PythonException e) {
            return Outcome.notApplicable(Main.oneLine(e));
        }
    }

    /** The library's tensor of three ones, imported into Java. */
    private static Outcome toJava(PyObject helpers, PyObject adapter, DataType dtype) {
        PyObject x;
        try {
            x = helpers.callMethod("sample", adapter, dtype.toString());
        } catch (PythonException e) {
            return Outcome.notApplicable("cannot make one: " + Main.oneLine(e));
        }
        try (x) {
            ImportRequest request = ImportRequest.of(x);
            try (ManagedTensor m = request.importTensor()) {
                Tensor v = m.tensor();
                if (!v.dtype().equals(dtype)) {
                    return Outcome.no("arrived as " + v.dtype());
                }
                for (long i = 0; i < 3; i++) {
                    if (v.getDouble(i) != 1) {
                        return Outcome.no("Java read " + v.getDouble(i) + " at [" + i + "] instead of 1");
                    }
                }
                return Outcome.yes(request.path() + (m.isVersioned() ? ", versioned" : ", legacy"));
            } catch (PythonException | DlpackException e) {
                return Outcome.no(Main.oneLine(e));
            }
        }
    }

    /** A Java tensor of three ones, imported by the library. */
    private static Outcome fromJava(PyObject helpers, PyObject adapter, DataType dtype) {
        try (Tensor t = Tensor.zeros(dtype, 3); PyObject jt = PythonDlpack.toPython(t)) {
            for (long i = 0; i < 3; i++) {
                t.setDouble(1, i);
            }
            try (PyObject how = helpers.callMethod("consume", adapter, jt, dtype.toString(), t.dataPointer())) {
                return Outcome.yes(how.str());
            } catch (PythonException e) {
                return e.pythonType().equals("LookupError") ? Outcome.notApplicable(e.pythonMessage()) : Outcome.no(Main.oneLine(e));
            }
        }
    }
}
