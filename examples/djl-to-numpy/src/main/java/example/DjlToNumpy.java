package example;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.djl.DjlTensors;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import java.lang.foreign.MemorySegment;

/**
 * A DJL result (a softmax over a matrix product, computed by libtorch through DJL's PyTorch engine)
 * read by numpy in the embedded CPython at the same address, without a copy; numpy's row sums come
 * back to Java. The embedded Python must not import torch: DJL's libtorch is in this process.
 */
public final class DjlToNumpy {
    public static void main(String[] args) {
        DjlTensors.checkLibtorch(); // no other libtorch in this process: DJL's engine can load
        Python py = Python.start();
        py.exec("import numpy as np");
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
             NDArray x = manager.arange(12f).reshape(3, 4).div(10);
             NDArray w = manager.ones(new ai.djl.ndarray.types.Shape(4, 5)).mul(manager.arange(5f));
             NDArray probs = x.matMul(w).softmax(1);
             Tensor t = DjlTensors.of(probs)) {
            long djlAddress = MemorySegment.ofBuffer(probs.toByteBuffer(true)).address();
            try (PyObject p = PythonDlpack.toPython(t)) {
                py.setGlobal("t", p);
            }
            py.exec("probs = np.from_dlpack(t)");
            long numpyAddress = py.eval("probs.ctypes.data").asLong();
            System.out.printf("DJL result %s %s at 0x%x, numpy reads 0x%x: same memory %b%n",
                    probs.getShape(), probs.getDataType(), djlAddress, numpyAddress, djlAddress == numpyAddress);
            System.out.println("numpy sees:");
            System.out.println(py.eval("np.array2string(probs, precision=4)").str());
            double numpySum = py.eval("float(probs.sum())").asDouble();
            float djlSum = probs.sum().getFloat();
            System.out.printf("row sums in numpy: %s%n", py.eval("np.round(probs.sum(axis=1), 4).tolist()").str());
            System.out.printf("total: numpy %.4f, DJL %.4f: agree %b%n", numpySum, djlSum,
                    Math.abs(numpySum - djlSum) < 1e-4);
            py.exec("probs[0, 0] = -1.0");
            System.out.printf("numpy wrote probs[0, 0] = -1, DJL reads %.1f%n", probs.getFloat(0, 0));
            py.exec("del probs, t");
        }
    }
}
