package io.github.dlpack4j.arrow;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Arrow data to torch and numpy in the embedded interpreter (.venv's torch 2.13, numpy 2.4.6) and back. */
@ExtendWith(ArrowNoLeaks.class)
class TorchEndToEndTest {
    static final Python PY = Python.start();

    static {
        PY.exec("import gc, numpy as np, torch");
    }

    /** Python lets go of everything a test kept (then ArrowNoLeaks checks that Arrow got it all back). */
    @AfterEach
    void dropPythonsReferences() {
        PY.exec("""
                for _n in [n for n in globals() if n.startswith('x_')]:
                    del globals()[_n]
                gc.collect()""");
    }

    /** The README's example: a batch of 10,000 embeddings of 384 floats to torch and its norms back. */
    @Test
    void aBatchOfEmbeddingsReachesTorchWithoutACopyAndItsNormsComeBackAsAFloat4Vector(BufferAllocator allocator) {
        int rows = 10_000;
        int d = 384;
        try (FixedSizeListVector embeddings = FixedSizeListVector.empty("embedding", d, allocator)) {
            Float4Vector values = (Float4Vector) embeddings.addOrGetVector(
                    FieldType.nullable(Vectors.FLOAT32)).getVector();
            embeddings.allocateNew();
            for (int i = 0; i < rows * d; i++) {
                values.setSafe(i, (float) Math.sin(i));
            }
            for (int r = 0; r < rows; r++) {
                embeddings.setNotNull(r);
            }
            embeddings.setValueCount(rows);

            Float4Vector norms;
            try (Tensor batch = ArrowTensors.of(embeddings);                    // [10000, 384] float32, no copy
                 PyObject forPython = PythonDlpack.toPython(batch)) {
                PY.setGlobal("x_batch", forPython);
                PY.exec("""
                        x_t = torch.from_dlpack(x_batch)
                        x_norms = torch.linalg.vector_norm(x_t, dim=1)""");
                try (PyObject address = PY.eval("x_t.data_ptr()")) {
                    assertThat(address.asLong()).as("torch sees Arrow's buffer").isEqualTo(Vectors.address(values));
                }
                try (PyObject result = PY.getGlobal("x_norms");
                     ManagedTensor m = PythonDlpack.fromDlpack(result)) {              // torch's memory, no copy
                    norms = (Float4Vector) ArrowTensors.toVector(m.tensor(), allocator, "norm");
                }                                                                    // the vector keeps torch's memory
                try (PyObject address = PY.eval("x_norms.data_ptr()")) {
                    assertThat(Vectors.address(norms)).as("the vector is over torch's result").isEqualTo(address.asLong());
                }
            }
            try (norms) {
                assertThat(norms.getValueCount()).isEqualTo(rows);
                for (int r = 0; r < rows; r += 997) {
                    double sum = 0;
                    for (int j = 0; j < d; j++) {
                        double x = values.get(r * d + j);
                        sum += x * x;
                    }
                    assertThat(norms.get(r)).as("norm of row %d", r).isCloseTo((float) Math.sqrt(sum), within(1e-4f));
                }
            }
        }
    }

    @Test
    void aNumpyArrayOfAVectorOutlivesTheTensorAndTheVector(BufferAllocator allocator) {
        Float4Vector v = Vectors.floats(allocator, 1, 2, 3);
        Tensor t = ArrowTensors.of(v);
        try (PyObject forPython = PythonDlpack.toPython(t)) {
            PY.setGlobal("x_tensor", forPython);
        }
        PY.exec("x_a = np.from_dlpack(x_tensor)\ndel x_tensor");
        t.close();
        v.close();
        assertThat(allocator.getAllocatedMemory()).as("numpy's export holds the buffer").isPositive();
        try (PyObject sum = PY.eval("float(x_a.sum()) + 10 * float(x_a[2])")) {
            assertThat(sum.asDouble()).isEqualTo(36);
        }
        PY.exec("del x_a\ngc.collect()");
        assertThat(allocator.getAllocatedMemory()).isZero();
    }

    @Test
    void aTorchTensorAsAVectorKeepsTorchsMemoryUntilTheVectorIsClosed(BufferAllocator allocator) {
        // torch.from_numpy's tensor holds a reference to the array until torch frees the tensor's memory.
        PY.exec("x_np = np.arange(12.0).reshape(3, 4)\nx_src = torch.from_numpy(x_np)");
        FieldVector v;
        try (PyObject src = PY.getGlobal("x_src"); ManagedTensor m = PythonDlpack.fromDlpack(src)) {
            v = ArrowTensors.toVector(m.tensor(), allocator);
        }
        PY.exec("del x_src\ngc.collect()");
        try (v) {
            assertThat(((FixedSizeListVector) v).getObject(2)).isEqualTo(java.util.List.of(8.0, 9.0, 10.0, 11.0));
            assertThat(arrayReferences()).as("torch's memory is still held").isEqualTo(3);
        }
        PY.exec("gc.collect()"); // a deleter let go without the GIL runs at the next GIL holder
        assertThat(arrayReferences()).as("x_np and getrefcount's argument only").isEqualTo(2);
    }

    private static long arrayReferences() {
        try (PyObject refs = PY.eval("__import__('sys').getrefcount(x_np)")) {
            return refs.asLong();
        }
    }
}
