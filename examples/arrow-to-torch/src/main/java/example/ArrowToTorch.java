package example;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.arrow.ArrowTensors;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * An Arrow batch of embeddings ({@code FixedSizeList<float32>[16]}) to torch in the embedded
 * interpreter without a copy, torch's row norms back as an Arrow {@code Float4Vector} over torch's
 * memory.
 */
public final class ArrowToTorch {
    private ArrowToTorch() {}

    public static void main(String[] args) {
        Python py = Python.start();   // -Ddlpack4j.python=... or DLPACK4J_PYTHON: a Python with torch
        py.exec("import torch");
        int rows = 1000;
        int dims = 16;
        try (BufferAllocator allocator = new RootAllocator();
             FixedSizeListVector embeddings = FixedSizeListVector.empty("embedding", dims, allocator)) {
            Float4Vector values = (Float4Vector) embeddings.addOrGetVector(
                    FieldType.notNullable(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE))).getVector();
            embeddings.allocateNew();
            for (int i = 0; i < rows * dims; i++) {
                values.setSafe(i, (i % dims == 0) ? 3 : (i % dims == 1) ? 4 : 0);   // every row (3, 4, 0, ...): norm 5
            }
            for (int r = 0; r < rows; r++) {
                embeddings.setNotNull(r);
            }
            embeddings.setValueCount(rows);

            Float4Vector norms;
            try (Tensor batch = ArrowTensors.of(embeddings);                 // [1000, 16] over Arrow's buffer
                 PyObject forTorch = PythonDlpack.toPython(batch)) {
                py.setGlobal("batch", forTorch);
                py.exec("""
                        t = torch.from_dlpack(batch)                          # Arrow's memory, no copy
                        norms = torch.linalg.vector_norm(t, dim=1)""");
                try (PyObject torchAddress = py.eval("t.data_ptr()")) {
                    System.out.printf("Arrow values at 0x%x, torch reads 0x%x: same memory %b%n",
                            values.getDataBufferAddress(), torchAddress.asLong(),
                            values.getDataBufferAddress() == torchAddress.asLong());
                }
                try (PyObject result = py.getGlobal("norms"); ManagedTensor m = PythonDlpack.fromDlpack(result);
                     PyObject torchAddress = py.eval("norms.data_ptr()")) {
                    norms = (Float4Vector) ArrowTensors.toVector(m.tensor(), allocator, "norm");  // torch's memory
                    System.out.printf("torch norms at 0x%x, Arrow vector at 0x%x: same memory %b%n",
                            torchAddress.asLong(), norms.getDataBufferAddress(),
                            norms.getDataBufferAddress() == torchAddress.asLong());
                }
                py.exec("del batch, t, norms");
            }
            // Python's references closed above were dropped without the GIL: they are released at the
            // next GIL holder (or within 20 ms); taking it now lets Arrow's buffer go before the check.
            py.exec("import gc; gc.collect()");
            try (norms) {   // holds torch's memory until closed
                System.out.printf("%d norms back in Arrow, first %.1f, last %.1f%n", norms.getValueCount(),
                        norms.get(0), norms.get(rows - 1));
            }
        }
        System.out.println("allocator empty after close");
    }
}
