package example.serve.protocol;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;

/**
 * torch's own answers, in the test's interpreter, with the services' weights: each model built by
 * {@code serve_models.build} and run directly on the same inputs, for the services' answers to be
 * checked against.
 */
public final class TorchReference {
    private final Python py;

    /**
     * Builds the reference models in {@code py}, which has the module {@code serve_models}
     * ({@link ServedModels#register}, done by every service that runs in this JVM).
     */
    public TorchReference(Python py) {
        this.py = py;
        ServedModels.register(py);
        py.exec("""
                import torch, serve_models
                references = {name: serve_models.build(name) for name in ("mlp", "resnet18")}

                def reference(name, x):
                    with torch.inference_mode():
                        return references[name](torch.from_dlpack(x)).contiguous()
                """);
    }

    /** {@return the interpreter the references run in} */
    public Python python() {
        return py;
    }

    /** {@return torch's output of reference model {@code model} for {@code x} of {@code shape}} */
    public float[] reference(String model, float[] x, long... shape) {
        try (Tensor t = Tensor.of(x, shape);
             PyObject shared = PythonDlpack.toPython(t);
             PyObject reference = py.getGlobal("reference");
             PyObject y = py.withGil(() -> reference.call(model, shared));
             ManagedTensor out = PythonDlpack.fromDlpack(y)) {
            return out.tensor().toFloatArray();
        }
    }
}
