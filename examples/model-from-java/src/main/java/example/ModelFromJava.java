package example;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.model.ModelStats;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;

/**
 * A TorchScript file that a Python script saved, served to a thousand virtual threads by one
 * {@link PythonModel}: each thread predicts on a row of its own, the model batches the rows, and
 * every answer is checked against torch running the same file directly.
 */
public final class ModelFromJava {
    private static final int THREADS = 1_000;

    private ModelFromJava() {}

    public static void main(String[] args) throws Exception {
        Path script = Path.of(args[0]);   // python/save_model.py
        Path file = Path.of(args[1]);     // where it saves the model: target/mlp.pt
        // The interpreter: -Ddlpack4j.python=... or DLPACK4J_PYTHON (a venv's python with torch), else python3.
        Python py = Python.start();
        py.setGlobal("script_dir", script.toAbsolutePath().getParent().toString());
        py.exec("import sys\nsys.path.insert(0, script_dir)");
        try (PyObject saveModel = py.importModule("save_model")) {
            saveModel.callMethod("save", file.toString()).close();

            float[][] answers = new float[THREADS][];
            try (PythonModel model = PythonModel.builder()
                    .torchScript(file)
                    .input("x", DataType.FLOAT32, -1, 16)
                    .output("scores", DataType.FLOAT32, -1, 4)
                    .batching(32, Duration.ofMillis(2))
                    .build()) {
                System.out.println("model " + model.name() + ": inputs " + model.inputs() + ", outputs " + model.outputs());
                try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
                    List<Future<float[]>> calls = new ArrayList<>();
                    for (int i = 0; i < THREADS; i++) {
                        float[] row = row(i);
                        calls.add(threads.submit(() -> {
                            try (Tensor x = Tensor.of(row, 1, 16);
                                 Tensor y = model.predict(x)) {   // the caller owns the output, and closes it
                                return y.toFloatArray();
                            }
                        }));
                    }
                    for (int i = 0; i < THREADS; i++) {
                        answers[i] = calls.get(i).get();
                    }
                }
                ModelStats s = model.stats();
                System.out.printf("%s: %d requests, %d answered, %d failed, %d rejected, %d timed out; "
                                + "%d model calls of up to %d rows; wait p50 %s p99 %s, call p50 %s p99 %s%n",
                        model.name(), s.requests(), s.answered(), s.failed(), s.rejected(), s.timedOut(),
                        s.batches(), s.largestBatchRows(), ms(s.queueWaitP50()), ms(s.queueWaitP99()),
                        ms(s.runP50()), ms(s.runP99()));
            }

            // Torch's own answers: the same file run directly in Python, one row at a time.
            float[] all = new float[THREADS * 16];
            for (int i = 0; i < THREADS; i++) {
                System.arraycopy(row(i), 0, all, i * 16, 16);
            }
            try (Tensor rows = Tensor.of(all, THREADS, 16);
                 PyObject rowsInPython = PythonDlpack.toPython(rows);
                 PyObject direct = saveModel.callMethod("answers", file.toString(), rowsInPython);
                 ManagedTensor expected = PythonDlpack.fromDlpack(direct)) {
                float[] torch = expected.tensor().toFloatArray();
                double maxDiff = 0;
                for (int i = 0; i < THREADS; i++) {
                    for (int j = 0; j < 4; j++) {
                        maxDiff = Math.max(maxDiff, Math.abs(answers[i][j] - torch[i * 4 + j]));
                    }
                }
                System.out.printf("%d virtual threads, each answered for its own row; torch running %s directly "
                        + "agrees: %b (max |diff| %.1e)%n", THREADS, file.getFileName(), maxDiff <= 1e-5, maxDiff);
            }
        }
    }

    /** Request {@code i}'s input: 16 values of its own. */
    private static float[] row(int i) {
        float[] row = new float[16];
        for (int j = 0; j < 16; j++) {
            row[j] = (float) Math.sin(i * 16 + j);
        }
        return row;
    }

    private static String ms(Duration d) {
        return String.format("%.2f ms", d.toNanos() / 1e6);
    }
}
