package io.github.dlpack4j.bench;

import ai.onnxruntime.OnnxJavaType;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.onnxruntime.DlpackSession;
import io.github.dlpack4j.onnxruntime.OrtTensors;
import io.github.dlpack4j.onnxruntime.SharedOnnxTensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * ONNX Runtime Java fed by dlpack4j tensors (dlpack4j-onnxruntime). Giving a tensor to ORT (an
 * {@code OnnxTensor} over its memory, made and closed) from one float32 element to 256 MiB: target
 * at most 2 µs and flat; ORT's own path from a {@code float[]}, which copies, beside it at 64 MiB.
 * A Gemm(256x256)+Relu+Gemm(256x16) MLP at batch 1: {@code DlpackSession.run} against Python
 * onnxruntime's {@code session.run(None, {"x": ndarray})} on the same model bytes in the same
 * process (target at most 1.0x) and against ORT Java's own run with {@code OnnxTensor}s made from
 * Java arrays (target at most 1.1x). Both sessions run on one intra-op thread (the setting for batch
 * 1; idle pool threads that spin would otherwise make the figures noise on a small machine). The
 * in-process ratios are printed after the measurement ({@code [in-fork] ortMlp}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", "-Xmx2g"})
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class OrtBench {
    private static final int FLOATS_64MIB = 16 * 1024 * 1024;

    /** A float32 tensor of {@code elements} zeros: 1 element to 256 MiB. */
    @State(Scope.Thread)
    public static class Given {
        /** Its element count. */
        @Param({"1", "1024", "1048576", "16777216", "67108864"})
        public int elements;
        Tensor tensor;
        ByteBuffer bytes;
        long[] shape;

        @Setup(Level.Trial)
        public void setUp() {
            tensor = Tensor.zeros(DataType.FLOAT32, elements);
            bytes = tensor.data().asByteBuffer().order(ByteOrder.nativeOrder());
            shape = new long[] {elements};
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            tensor.close();
        }
    }

    /** 64 MiB of floats in a Java array, as ORT Java's own API takes them. */
    @State(Scope.Thread)
    public static class JavaArray {
        final float[] values = new float[FLOATS_64MIB];
        final long[] shape = {FLOATS_64MIB};
    }

    /** The MLP, opened by ORT Java and by Python onnxruntime from the same bytes, and its batch-1 input. */
    @State(Scope.Thread)
    public static class Mlp {
        Python py;
        OrtSession session;
        DlpackSession dlpack;
        Map<String, Tensor> inputs;
        Tensor x;
        float[] xs;
        PyObject pythonLoop;

        @Setup(Level.Trial)
        public void setUp() throws OrtException {
            py = Python.start();
            py.exec("""
                    import numpy as np, onnx, onnxruntime as ort, timeit
                    from onnx import helper, TensorProto as T
                    rng = np.random.default_rng(0)
                    def init(name, shape):
                        return helper.make_tensor(name, T.FLOAT, shape, rng.standard_normal(shape, np.float32) / 16)
                    g = helper.make_graph(
                        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
                         helper.make_node("Gemm", ["r", "w2", "b2"], ["y"])], "mlp",
                        [helper.make_tensor_value_info("x", T.FLOAT, ["batch", 256])],
                        [helper.make_tensor_value_info("y", T.FLOAT, ["batch", 16])],
                        initializer=[init("w1", [256, 256]), init("b1", [256]), init("w2", [256, 16]), init("b2", [16])])
                    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
                    m.ir_version = 10
                    model_bytes = np.frombuffer(m.SerializeToString(), np.uint8)
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = 1
                    sess = ort.InferenceSession(model_bytes.tobytes(), options, providers=["CPUExecutionProvider"])
                    a = rng.standard_normal((1, 256), np.float32)
                    feeds = {"x": a}
                    def loop():
                        for _ in range(100):
                            sess.run(None, feeds)
                    """);
            byte[] model;
            try (PyObject bytes = py.getGlobal("model_bytes"); ManagedTensor m = PythonDlpack.fromDlpack(bytes)) {
                model = m.tensor().toByteArray();
            }
            try (OrtSession.SessionOptions options = new OrtSession.SessionOptions()) {
                options.setIntraOpNumThreads(1);
                session = OrtEnvironment.getEnvironment().createSession(model, options);
            }
            dlpack = DlpackSession.of(session);
            try (PyObject a = py.getGlobal("a"); ManagedTensor m = PythonDlpack.fromDlpack(a)) {
                xs = m.tensor().toFloatArray();
            }
            x = Tensor.of(xs, 1, 256);
            inputs = Map.of("x", x);
            pythonLoop = py.getGlobal("loop");
        }

        /**
         * After the DlpackSession benchmark: the three ways timed once more in this process, in turns
         * (300 rounds of 100 runs each, the best round of each way): on a busy machine the best of many
         * short rounds is the figure that other processes disturbed least, alike for all three.
         */
        @TearDown(Level.Trial)
        public void tearDown(BenchmarkParams params) throws OrtException {
            if (params.getBenchmark().endsWith(".mlpDlpackSessionRun")) {
                double dl = Double.MAX_VALUE;
                double java = Double.MAX_VALUE;
                double python = Double.MAX_VALUE;
                for (int round = 0; round < 300; round++) {
                    dl = Math.min(dl, perRun(() -> runDlpack(this)));
                    java = Math.min(java, perRun(() -> runOrtJava(this)));
                    try (PyObject p = py.eval("timeit.timeit('sess.run(None, feeds)', globals=globals(), "
                            + "number=100) / 100 * 1e9")) {
                        python = Math.min(python, p.asDouble());
                    }
                }
                System.out.printf("%n[in-fork] ortMlp: DlpackSession.run %.0f ns, Python onnxruntime session.run "
                        + "%.0f ns (%.2fx), ORT Java from arrays %.0f ns (%.2fx)%n", dl, python, dl / python, java,
                        dl / java);
            }
            pythonLoop.close();
            x.close();
            session.close();
        }

        private interface Run {
            float run() throws OrtException;
        }

        /** 100 runs, in ns per run. */
        private static double perRun(Run r) throws OrtException {
            long t0 = System.nanoTime();
            for (int i = 0; i < 100; i++) {
                r.run();
            }
            return (System.nanoTime() - t0) / 100.0;
        }
    }

    /** A tensor given to ORT: an OnnxTensor over its memory made, and closed with its hold. */
    @Benchmark
    public long tensorToOrt(Given g) throws OrtException {
        try (SharedOnnxTensor s = OrtTensors.toOnnxTensor(g.tensor)) {
            return s.onnxTensor().getInfo().getNumElements();
        }
    }

    /** ORT Java alone over a direct buffer of the same memory: the floor under {@link #tensorToOrt}. */
    @Benchmark
    public long ortAloneOverADirectBuffer(Given g) throws OrtException {
        try (OnnxTensor t = OnnxTensor.createTensor(OrtEnvironment.getEnvironment(), g.bytes, g.shape,
                OnnxJavaType.FLOAT)) {
            return t.getInfo().getNumElements();
        }
    }

    /** ORT Java's own path from a 64 MiB {@code float[]}: it copies into a direct buffer of its own. */
    @Benchmark
    public long ortCopiesFloatArrayOf64MiB(JavaArray a) throws OrtException {
        try (OnnxTensor t = OnnxTensor.createTensor(OrtEnvironment.getEnvironment(), FloatBuffer.wrap(a.values),
                a.shape)) {
            return t.getInfo().getNumElements();
        }
    }

    /** The MLP at batch 1 through {@code DlpackSession.run}: the output a tensor over ORT's memory. */
    @Benchmark
    public float mlpDlpackSessionRun(Mlp m) throws OrtException {
        return runDlpack(m);
    }

    /** The MLP at batch 1 through ORT Java's own run: an OnnxTensor from a float[], the output copied out. */
    @Benchmark
    public float mlpOrtJavaFromArrays(Mlp m) throws OrtException {
        return runOrtJava(m);
    }

    /** The MLP at batch 1 through Python onnxruntime's {@code session.run}, 100 runs in a Python loop. */
    @Benchmark
    @OperationsPerInvocation(100)
    public void mlpPythonOnnxruntime(Mlp m) {
        try (PyObject r = m.pythonLoop.call()) {
            // None
        }
    }

    private static float runDlpack(Mlp m) throws OrtException {
        try (Tensor y = m.dlpack.run(m.inputs).get("y")) {
            return y.getFloat(0, 0);
        }
    }

    private static float runOrtJava(Mlp m) throws OrtException {
        try (OnnxTensor in = OnnxTensor.createTensor(OrtEnvironment.getEnvironment(), FloatBuffer.wrap(m.xs),
                new long[] {1, 256});
             OrtSession.Result r = m.session.run(Map.of("x", in))) {
            return ((OnnxTensor) r.get(0)).getFloatBuffer().get(0);
        }
    }
}
