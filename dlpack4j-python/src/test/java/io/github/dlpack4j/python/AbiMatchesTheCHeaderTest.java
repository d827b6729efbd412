package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.abi.DLDataType;
import io.github.dlpack4j.abi.DLDevice;
import io.github.dlpack4j.abi.DLManagedTensor;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLPackExchangeAPI;
import io.github.dlpack4j.abi.DLPackExchangeAPIHeader;
import io.github.dlpack4j.abi.DLPackVersion;
import io.github.dlpack4j.abi.DLTensor;
import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.CpythonLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The layouts of io.github.dlpack4j.abi against a C compiler's answer for the real dlpack.h 1.3
 * (the copy torch 2.13 ships in .venv): every offset and size, and the version macros; and the
 * CPython structs and numbers that the Python type for Java tensors is built from, against the
 * embedded Python's own headers.
 */
class AbiMatchesTheCHeaderTest {
    @TempDir
    Path dir;

    @Test
    void everyOffsetAndSizeIsWhatGccComputesFromDlpackH() throws Exception {
        Path include;
        try (PyObject p = Python.start().eval("__import__('os').path.join(__import__('torch').__path__[0], 'include')")) {
            include = Path.of(p.str());
        }
        assertThat(include.resolve("ATen/dlpack.h")).exists();
        Map<String, Long> ours = new LinkedHashMap<>();
        ours.put("DLPACK_MAJOR_VERSION", 1L);
        ours.put("DLPACK_MINOR_VERSION", 3L);
        ours.put("sizeof(DLPackVersion)", DLPackVersion.SIZE);
        ours.put("offsetof(DLPackVersion, minor)", DLPackVersion.MINOR);
        ours.put("sizeof(DLDevice)", DLDevice.SIZE);
        ours.put("offsetof(DLDevice, device_id)", DLDevice.DEVICE_ID);
        ours.put("sizeof(DLDataType)", DLDataType.SIZE);
        ours.put("offsetof(DLDataType, bits)", DLDataType.BITS);
        ours.put("offsetof(DLDataType, lanes)", DLDataType.LANES);
        ours.put("sizeof(DLTensor)", DLTensor.SIZE);
        ours.put("offsetof(DLTensor, device)", DLTensor.DEVICE);
        ours.put("offsetof(DLTensor, ndim)", DLTensor.NDIM);
        ours.put("offsetof(DLTensor, dtype)", DLTensor.DTYPE);
        ours.put("offsetof(DLTensor, shape)", DLTensor.SHAPE);
        ours.put("offsetof(DLTensor, strides)", DLTensor.STRIDES);
        ours.put("offsetof(DLTensor, byte_offset)", DLTensor.BYTE_OFFSET);
        ours.put("sizeof(DLManagedTensor)", DLManagedTensor.SIZE);
        ours.put("offsetof(DLManagedTensor, manager_ctx)", DLManagedTensor.MANAGER_CTX);
        ours.put("offsetof(DLManagedTensor, deleter)", DLManagedTensor.DELETER);
        ours.put("sizeof(DLManagedTensorVersioned)", DLManagedTensorVersioned.SIZE);
        ours.put("offsetof(DLManagedTensorVersioned, manager_ctx)", DLManagedTensorVersioned.MANAGER_CTX);
        ours.put("offsetof(DLManagedTensorVersioned, deleter)", DLManagedTensorVersioned.DELETER);
        ours.put("offsetof(DLManagedTensorVersioned, flags)", DLManagedTensorVersioned.FLAGS);
        ours.put("offsetof(DLManagedTensorVersioned, dl_tensor)", DLManagedTensorVersioned.DL_TENSOR);
        ours.put("sizeof(DLPackExchangeAPIHeader)", DLPackExchangeAPIHeader.SIZE);
        ours.put("offsetof(DLPackExchangeAPIHeader, prev_api)", DLPackExchangeAPIHeader.PREV_API);
        ours.put("sizeof(DLPackExchangeAPI)", DLPackExchangeAPI.SIZE);
        ours.put("offsetof(DLPackExchangeAPI, managed_tensor_allocator)", DLPackExchangeAPI.MANAGED_TENSOR_ALLOCATOR);
        ours.put("offsetof(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync)", DLPackExchangeAPI.MANAGED_TENSOR_FROM_PY_OBJECT_NO_SYNC);
        ours.put("offsetof(DLPackExchangeAPI, managed_tensor_to_py_object_no_sync)", DLPackExchangeAPI.MANAGED_TENSOR_TO_PY_OBJECT_NO_SYNC);
        ours.put("offsetof(DLPackExchangeAPI, dltensor_from_py_object_no_sync)", DLPackExchangeAPI.DLTENSOR_FROM_PY_OBJECT_NO_SYNC);
        ours.put("offsetof(DLPackExchangeAPI, current_work_stream)", DLPackExchangeAPI.CURRENT_WORK_STREAM);
        ours.put("kDLTrn", 18L);
        ours.put("kDLFloat4_e2m1fn", 17L);
        ours.put("DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED", 4L);

        assertThat(gccAnswers(include, "ATen/dlpack.h", ours.keySet())).isEqualTo(ours);
    }

    @Test
    void theTypeSpecMethodTableAndSlotNumbersAreWhatGccComputesFromPythonH() throws Exception {
        Path include;
        try (PyObject p = Python.start().eval("__import__('sysconfig').get_paths()['include']")) {
            include = Path.of(p.str());
        }
        assertThat(include.resolve("Python.h")).exists();
        Map<String, Long> ours = new LinkedHashMap<>();
        ours.put("Py_tp_doc", (long) CpythonLayout.Py_tp_doc);
        ours.put("Py_tp_methods", (long) CpythonLayout.Py_tp_methods);
        ours.put("Py_tp_repr", (long) CpythonLayout.Py_tp_repr);
        ours.put("Py_tp_finalize", (long) CpythonLayout.Py_tp_finalize);
        ours.put("Py_TPFLAGS_DISALLOW_INSTANTIATION", (long) CpythonLayout.Py_TPFLAGS_DISALLOW_INSTANTIATION);
        ours.put("METH_VARARGS", (long) CpythonLayout.METH_VARARGS);
        ours.put("METH_KEYWORDS", (long) CpythonLayout.METH_KEYWORDS);
        ours.put("METH_NOARGS", (long) CpythonLayout.METH_NOARGS);
        ours.put("METH_FASTCALL", (long) CpythonLayout.METH_FASTCALL);
        ours.put("Py_file_input", (long) CApi.Py_file_input);
        ours.put("Py_eval_input", (long) CApi.Py_eval_input);
        ours.put("sizeof(PyMethodDef)", CpythonLayout.METHOD_DEF_SIZE);
        ours.put("offsetof(PyMethodDef, ml_meth)", CpythonLayout.ML_METH);
        ours.put("offsetof(PyMethodDef, ml_flags)", CpythonLayout.ML_FLAGS);
        ours.put("offsetof(PyMethodDef, ml_doc)", CpythonLayout.ML_DOC);
        ours.put("sizeof(PyType_Slot)", CpythonLayout.SLOT_SIZE);
        ours.put("offsetof(PyType_Slot, pfunc)", CpythonLayout.SLOT_PFUNC);
        ours.put("sizeof(PyType_Spec)", CpythonLayout.SPEC_SIZE);
        ours.put("offsetof(PyType_Spec, basicsize)", CpythonLayout.SPEC_BASICSIZE);
        ours.put("offsetof(PyType_Spec, itemsize)", CpythonLayout.SPEC_ITEMSIZE);
        ours.put("offsetof(PyType_Spec, flags)", CpythonLayout.SPEC_FLAGS);
        ours.put("offsetof(PyType_Spec, slots)", CpythonLayout.SPEC_SLOTS);
        assertThat(gccAnswers(include, "Python.h", ours.keySet())).isEqualTo(ours);
    }

    /** What a C program compiled against {@code header} prints for each integer expression. */
    private Map<String, Long> gccAnswers(Path include, String header, Iterable<String> expressions) throws Exception {
        StringBuilder c = new StringBuilder("#include <" + header + ">\n#include <stdio.h>\n#include <stddef.h>\nint main(void) {\n");
        for (String expr : expressions) {
            c.append("  printf(\"%s=%lld\\n\", \"").append(expr).append("\", (long long) (").append(expr).append("));\n");
        }
        c.append("  return 0;\n}\n");
        Files.writeString(dir.resolve("abi.c"), c);
        Process gcc = new ProcessBuilder("gcc", "-I", include.toString(), "-o", dir.resolve("abi").toString(),
                dir.resolve("abi.c").toString()).redirectErrorStream(true).start();
        String gccOut = new String(gcc.getInputStream().readAllBytes());
        assertThat(gcc.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(gcc.exitValue()).as(gccOut).isZero();
        Process run = new ProcessBuilder(dir.resolve("abi").toString()).start();
        Map<String, Long> theirs = new LinkedHashMap<>();
        for (String line : new String(run.getInputStream().readAllBytes()).split("\n")) {
            int eq = line.lastIndexOf('=');
            theirs.put(line.substring(0, eq), Long.parseLong(line.substring(eq + 1)));
        }
        assertThat(run.waitFor(10, TimeUnit.SECONDS)).isTrue();
        return theirs;
    }
}
