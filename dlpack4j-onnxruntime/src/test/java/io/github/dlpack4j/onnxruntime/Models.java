package io.github.dlpack4j.onnxruntime;

import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;

/**
 * Models made with onnx.helper in the embedded interpreter (.venv's onnx and onnxruntime), opened by
 * ORT Java from the same bytes; Python onnxruntime sessions of them are kept in {@code sessions[name]}.
 */
final class Models {
    static final Python PY = Python.start();

    static {
        PY.exec("""
                import gc, numpy as np, onnx, onnxruntime as ort, torch
                from onnx import helper, TensorProto as T
                sessions = {}

                def model(name, nodes, inputs, outputs, inits=()):
                    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
                    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
                    m.ir_version = 10
                    onnx.checker.check_model(m)
                    b = m.SerializeToString()
                    sessions[name] = ort.InferenceSession(b, providers=["CPUExecutionProvider"])
                    return np.frombuffer(b, np.uint8)

                def io(name, et, shape):
                    return helper.make_tensor_value_info(name, et, shape)

                def identity(name, et):
                    return model(name, [helper.make_node("Identity", ["x"], ["y"])], [io("x", et, ["n", 3])],
                                 [io("y", et, ["n", 3])])

                def two_in_two_out(name):
                    return model(name, [helper.make_node("Add", ["a", "b"], ["sum"]),
                                        helper.make_node("Mul", ["a", "b"], ["product"])],
                                 [io("a", T.FLOAT, [2, 3]), io("b", T.FLOAT, [2, 3])],
                                 [io("sum", T.FLOAT, [2, 3]), io("product", T.FLOAT, [2, 3])])

                def mlp(name, batch="batch", hidden=256, out=16):
                    rng = np.random.default_rng(0)
                    w1 = helper.make_tensor("w1", T.FLOAT, [256, hidden], rng.standard_normal((256, hidden), np.float32) / 16)
                    b1 = helper.make_tensor("b1", T.FLOAT, [hidden], rng.standard_normal(hidden, np.float32))
                    w2 = helper.make_tensor("w2", T.FLOAT, [hidden, out], rng.standard_normal((hidden, out), np.float32) / 16)
                    b2 = helper.make_tensor("b2", T.FLOAT, [out], rng.standard_normal(out, np.float32))
                    return model(name, [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
                                        helper.make_node("Relu", ["h"], ["r"]),
                                        helper.make_node("Gemm", ["r", "w2", "b2"], ["y"])],
                                 [io("x", T.FLOAT, [batch, 256])], [io("y", T.FLOAT, [batch, out])], [w1, b1, w2, b2])
                """);
    }

    private Models() {}

    /** An ORT Java session of the model that the Python expression {@code builder} returns the bytes of. */
    static OrtSession session(String builder) throws OrtException {
        try (PyObject bytes = PY.eval(builder);
             ManagedTensor m = PythonDlpack.fromDlpack(bytes)) {
            return OrtEnvironment.getEnvironment().createSession(m.tensor().toByteArray());
        }
    }

    /** {@code t} as the Python global {@code name}, a numpy array over the same memory. */
    static void toNumpy(String name, Tensor t) {
        try (PyObject p = PythonDlpack.toPython(t)) {
            PY.setGlobal("_x", p);
        }
        PY.exec(name + " = np.from_dlpack(_x)\ndel _x");
    }

    /** The Python global (or expression) {@code expr}, imported without a copy. */
    static ManagedTensor fromPython(String expr) {
        try (PyObject o = PY.eval(expr)) {
            return PythonDlpack.fromDlpack(o);
        }
    }

    /** {@return the Python boolean {@code expr}} */
    static boolean isTrue(String expr) {
        try (PyObject o = PY.eval("bool(" + expr + ")")) {
            return o.asLong() != 0;
        }
    }

    /** {@return the Python integer {@code expr}} */
    static long pyLong(String expr) {
        try (PyObject o = PY.eval(expr)) {
            return o.asLong();
        }
    }
}
