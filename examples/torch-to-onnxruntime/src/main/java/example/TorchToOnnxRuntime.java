package example;

import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.onnxruntime.DlpackSession;
import io.github.dlpack4j.onnxruntime.OrtTensors;
import io.github.dlpack4j.onnxruntime.SharedOnnxTensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import java.lang.foreign.MemorySegment;
import java.util.Map;

/**
 * A torch model exported to ONNX, run by ONNX Runtime Java on a torch tensor, its output read by
 * numpy: torch's memory goes to ORT and ORT's result goes to numpy without a copy.
 */
public final class TorchToOnnxRuntime {
    private TorchToOnnxRuntime() {}

    public static void main(String[] args) throws OrtException {
        // The interpreter: -Ddlpack4j.python=... or DLPACK4J_PYTHON (a venv's python with torch and onnx).
        Python py = Python.start();
        py.exec("""
                import io, warnings, numpy as np, torch
                torch.manual_seed(0)
                model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)).eval()
                x = torch.randn(4, 8)
                with torch.no_grad():
                    expected = model(x)
                f = io.BytesIO()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    torch.onnx.export(model, (x,), f, input_names=["x"], output_names=["y"],
                                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, dynamo=False)
                model_bytes = np.frombuffer(f.getvalue(), np.uint8)
                """);
        byte[] onnxModel;
        try (PyObject bytes = py.getGlobal("model_bytes"); ManagedTensor m = PythonDlpack.fromDlpack(bytes)) {
            onnxModel = m.tensor().toByteArray();
        }
        try (OrtSession session = OrtEnvironment.getEnvironment().createSession(onnxModel);
             PyObject torchInput = py.getGlobal("x");
             PyObject torchAddress = torchInput.callMethod("data_ptr");
             ManagedTensor x = PythonDlpack.fromDlpack(torchInput)) {          // torch's memory, no copy
            long torchAt = torchAddress.asLong();
            System.out.printf("torch input at 0x%x, Java tensor at 0x%x: same memory %b%n", torchAt,
                    x.tensor().dataPointer(), torchAt == x.tensor().dataPointer());
            try (SharedOnnxTensor onnx = OrtTensors.toOnnxTensor(x.tensor())) {  // what DlpackSession gives ORT
                long ortAt = MemorySegment.ofBuffer(onnx.onnxTensor().getBufferRef().orElseThrow()).address();
                System.out.printf("ORT OnnxTensor over 0x%x (ownsBuffer %b), torch input at 0x%x: same memory %b%n",
                        ortAt, onnx.onnxTensor().ownsBuffer(), torchAt, ortAt == torchAt);
            }
            Map<String, Tensor> outputs = DlpackSession.of(session).run(Map.of("x", x.tensor()));
            try (Tensor y = outputs.get("y");                                  // ORT's memory, no copy
                 PyObject forNumpy = PythonDlpack.toPython(y)) {
                py.setGlobal("y_java", forNumpy);
                py.exec("y = np.from_dlpack(y_java)");
                try (PyObject numpyAt = py.eval("y.ctypes.data");
                     PyObject agree = py.eval("bool(np.allclose(y, expected.numpy(), atol=1e-5))");
                     PyObject first = py.eval("float(y[0, 0])")) {
                    System.out.printf("ORT output %s at 0x%x, numpy reads 0x%x: same memory %b%n",
                            java.util.Arrays.toString(y.shape()), y.dataPointer(), numpyAt.asLong(),
                            numpyAt.asLong() == y.dataPointer());
                    System.out.printf("ORT and torch agree: %b (y[0, 0] = %.6f)%n", agree.asBoolean(), first.asDouble());
                }
                py.exec("del y, y_java");
            }
        }
    }
}
