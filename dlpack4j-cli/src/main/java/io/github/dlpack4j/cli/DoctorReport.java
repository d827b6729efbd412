package io.github.dlpack4j.cli;

import java.util.List;
import java.util.Map;

/**
 * What {@code dlpack4j doctor} found, as {@code --json} writes it (Jackson, field for field; the schema
 * is docs/doctor.schema.json, kept equal to these records by DoctorTest).
 *
 * @param schemaVersion the version of this layout (1)
 * @param ok            whether every check passed (then the exit code is 0)
 * @param jdk           the JVM and its native access
 * @param python        the interpreter and how it was chosen
 * @param libraries     each DLPack library looked for, installed or not
 * @param onnxRuntime   ONNX Runtime Java, when dlpack4j-onnxruntime and ORT are on the class path
 * @param images        Java images as tensors (dlpack4j-image), each layout tried
 * @param djl           DJL (dlpack4j-djl), tried in a JVM of its own when it is on the class path
 * @param problems      each failed check with its fix; empty when {@code ok}
 */
record DoctorReport(int schemaVersion, boolean ok, Jdk jdk, PythonInfo python, List<Library> libraries,
                    OnnxRuntime onnxRuntime, Images images, Djl djl, List<Problem> problems) {
    static final int SCHEMA_VERSION = 1;

    /**
     * @param version      {@code Runtime.version()}
     * @param vendor       {@code java.vendor}
     * @param home         {@code java.home}
     * @param modulePath   whether dlpack4j runs as named modules (else on the class path)
     * @param nativeAccess for each dlpack4j module (or ALL-UNNAMED), whether it may call native code
     */
    record Jdk(String version, String vendor, String home, boolean modulePath, Map<String, Boolean> nativeAccess) {}

    /**
     * @param executable the Python executable
     * @param chosenBy   {@code --python}, {@code -Ddlpack4j.python}, {@code DLPACK4J_PYTHON} or
     *                   {@code python3 on the PATH}
     * @param embedded   whether the interpreter started in this JVM
     * @param version    {@code sys.version} (null if it did not start)
     * @param libpython  the libpython file mapped into this process (null if it did not start)
     * @param shared     {@code sysconfig}'s {@code Py_ENABLE_SHARED} (null if it did not start)
     */
    record PythonInfo(String executable, String chosenBy, boolean embedded, String version, String libpython,
                      Boolean shared) {}

    /**
     * @param name     the module, e.g. {@code numpy}
     * @param status   {@code ok}, {@code not-installed} or {@code import-error}
     * @param version  its {@code __version__} (null unless ok)
     * @param error    why it failed to import (null unless import-error)
     * @param protocol what its {@code __dlpack__} does (null unless ok)
     * @param dtypes   the dtype matrix (empty unless ok)
     */
    record Library(String name, String status, String version, String error, Protocol protocol, List<DtypeRow> dtypes) {}

    /**
     * @param status          {@code ok}, {@code absent} (not on the class path: optional) or {@code error}
     * @param version         ORT's version (null unless ok)
     * @param outputsZeroCopy whether output tensors are views of ORT's memory (null unless ok)
     * @param error           why ORT could not be used (null unless error)
     * @param dtypes          per DLPack dtype: toJava an ORT tensor as a Java tensor, fromJava a Java
     *                        tensor as an {@code OnnxTensor} (empty unless ok)
     */
    record OnnxRuntime(String status, String version, Boolean outputsZeroCopy, String error, List<DtypeRow> dtypes) {
        static OnnxRuntime absent() {
            return new OnnxRuntime("absent", null, null, null, List.of());
        }
    }

    /**
     * Deep Java Library (dlpack4j-djl), tried in a JVM of its own when it is on the class path.
     *
     * @param status            {@code ok}, {@code absent} or {@code error}
     * @param djlVersion        DJL's version (null unless ok)
     * @param libtorchVersion   the libtorch of DJL's PyTorch engine (null unless ok)
     * @param ofZeroCopy        whether {@code DjlTensors.of} gave a tensor at the array's address (null unless ok)
     * @param toNDArrayZeroCopy whether {@code DjlTensors.toNDArray} gave an array at the tensor's address (null unless ok)
     * @param error             why DJL could not be used (null unless error)
     */
    record Djl(String status, String djlVersion, String libtorchVersion, Boolean ofZeroCopy, Boolean toNDArrayZeroCopy,
               String error) {
        static Djl absent() {
            return new Djl("absent", null, null, null, null, null);
        }
    }

    /**
     * @param keywords         for each of {@code stream}, {@code max_version}, {@code dl_device}, {@code copy}:
     *                         {@code accepted}, or {@code refused: ...} / {@code error: ...}
     * @param capsule          the capsule name {@code __dlpack__()} returns
     * @param versionedCapsule the capsule name {@code __dlpack__(max_version=(1, 3))} returns (null if refused)
     * @param exchangeApi      the exchange-API attribute of the array type (null if none)
     * @param exchangeApiVersion the version of its table that Java reads (null if Java cannot use it)
     * @param javaImportRoute  the route dlpack4j's import of a float32 array took ({@code ImportPath})
     * @param readOnlyToJava   what Java gets from an array the library will not let anyone write
     * @param readOnlyFromJava what the library does with a read-only Java tensor
     */
    record Protocol(Map<String, String> keywords, String capsule, String versionedCapsule, String exchangeApi,
                    String exchangeApiVersion, Outcome javaImportRoute, Outcome readOnlyToJava, Outcome readOnlyFromJava) {}

    /**
     * @param dtype    the DLPack dtype, NumPy-style ({@code float32}, {@code bfloat16}, {@code float8_e4m3fn})
     * @param toJava   the library's tensor of three ones imported into Java
     * @param fromJava a Java tensor of three ones imported by the library
     */
    record DtypeRow(String dtype, Outcome toJava, Outcome fromJava) {}

    /**
     * @param status  {@code ok}, or {@code error} (ImageIO could not be used)
     * @param error   why not (null unless error)
     * @param readers the formats ImageIO reads, lower case
     * @param layouts per raster layout of ImageIO's PNG and JPEG readers: toTensor {@code ImageTensors.of}
     *                with every sample checked, fromTensor {@code toImage} and back without a copy
     * @param files   per format (png, jpeg): a file ImageIO wrote, read by {@code ImageTensors.read} with
     *                the pixels of {@code ImageIO.read}
     */
    record Images(String status, String error, List<String> readers, List<LayoutRow> layouts,
                  Map<String, Outcome> files) {}

    record LayoutRow(String layout, Outcome toTensor, Outcome fromTensor) {}

    /**
     * @param result {@code yes}, {@code no}, or {@code n/a} (the library has no such dtype, or no importer)
     * @param detail what happened, in words
     */
    record Outcome(String result, String detail) {
        static Outcome yes(String detail) {
            return new Outcome("yes", detail);
        }

        static Outcome no(String detail) {
            return new Outcome("no", detail);
        }

        static Outcome notApplicable(String detail) {
            return new Outcome("n/a", detail);
        }
    }

    /**
     * @param check   what was checked, e.g. {@code python} or {@code library broken_lib}
     * @param message what failed
     * @param fix     what to do about it
     */
    record Problem(String check, String message, String fix) {}
}
