package example;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;

/**
 * Java data through a small torch model in the embedded interpreter and back, zero-copy both ways:
 * torch reads the Java batch where it lies, and Java reads torch's result where torch wrote it.
 */
public final class EmbedTorch {
    private EmbedTorch() {}

    public static void main(String[] args) {
        // The interpreter: -Ddlpack4j.python=... or DLPACK4J_PYTHON (a venv's python with torch), else python3.
        Python py = Python.start();
        py.exec("""
                import torch
                torch.manual_seed(0)
                model = torch.nn.Linear(8, 3)

                def predict(batch):
                    x = torch.from_dlpack(batch)       # the Java tensor's memory, no copy
                    with torch.no_grad():
                        y = model(x)
                    return x.data_ptr(), y, float(y.sum())
                """);
        float[] batch = new float[4 * 8];
        for (int i = 0; i < batch.length; i++) {
            batch[i] = (i % 8) * 0.25f - 1 + (i / 8) * 0.5f;   // row r: -1 + r/2, -0.75 + r/2, ...
        }
        try (Tensor x = Tensor.of(batch, 4, 8);
             PyObject predict = py.getGlobal("predict");
             PyObject javaBatch = PythonDlpack.toPython(x);
             PyObject result = predict.call(javaBatch);
             PyObject torchInput = result.callMethod("__getitem__", 0);
             PyObject y = result.callMethod("__getitem__", 1);
             PyObject torchSum = result.callMethod("__getitem__", 2);
             PyObject torchOutput = y.callMethod("data_ptr");
             ManagedTensor out = PythonDlpack.fromDlpack(y)) {   // torch's result, no copy
            Tensor logits = out.tensor();
            System.out.printf("Java batch   float32 %s at 0x%x%n", java.util.Arrays.toString(x.shape()), x.dataPointer());
            System.out.printf("torch input  at 0x%x: same memory %b%n", torchInput.asLong(),
                    torchInput.asLong() == x.dataPointer());
            System.out.printf("torch output at 0x%x, Java reads it at 0x%x: same memory %b%n", torchOutput.asLong(),
                    logits.dataPointer(), torchOutput.asLong() == logits.dataPointer());
            double javaSum = 0;
            for (double v : logits.toDoubleArray()) {
                javaSum += v;
            }
            System.out.println("logits " + logits);
            System.out.printf("sum of the logits: Java %.6f, torch %.6f%n", javaSum, torchSum.asDouble());
        }
    }
}
