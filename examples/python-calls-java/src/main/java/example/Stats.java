package example;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;

/** Java methods on tensors that a Python program calls with NumPy arrays (see run.py). */
public final class Stats {
    private Stats() {}

    /** The mean of each column of a 2-d tensor, as a new float64 tensor that Python reads zero-copy. */
    public static Tensor columnMeans(Tensor x) {
        if (x.ndim() != 2) {
            throw new IllegalArgumentException("columnMeans needs a 2-d tensor, not " + x);
        }
        long rows = x.shape()[0];
        long cols = x.shape()[1];
        Tensor means = Tensor.zeros(DataType.FLOAT64, cols);
        for (long j = 0; j < cols; j++) {
            double s = 0;
            for (long i = 0; i < rows; i++) {
                s += x.getDouble(i, j);
            }
            means.setDouble(s / rows, j);
        }
        return means;
    }

    /** Scales every element of {@code x} in place: Python sees the change in its own array. */
    public static void scaleInPlace(Tensor x, double factor) {
        long n = x.numel();
        Tensor flat = x.reshape(n);
        for (long i = 0; i < n; i++) {
            flat.setDouble(flat.getDouble(i) * factor, i);
        }
    }

    /** The address of the first element, to show that Java works on Python's memory. */
    public static long address(Tensor x) {
        return x.dataPointer();
    }
}
