package io.github.dlpack4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;

import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** One session shared by eight threads: each gets its own results, and nothing is left behind. */
class ThreadsTest {
    @Test
    void eightThreadsSharingOneSessionEachGetTheResultsOfTheirOwnInputs() throws Exception {
        Baseline before = Baseline.now();
        try (OrtSession s = Models.session("mlp('mlp')")) {
            DlpackSession session = DlpackSession.of(s);
            float[][] expected = new float[8][];
            for (int t = 0; t < 8; t++) {
                try (Tensor x = input(t); Tensor y = session.run(Map.of("x", x)).get("y")) {
                    expected[t] = y.toFloatArray();
                }
            }
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                List<Future<Integer>> done = new ArrayList<>();
                for (int t = 0; t < 8; t++) {
                    int id = t;
                    done.add(pool.submit(() -> runMany(session, id, expected[id])));
                }
                for (Future<Integer> f : done) {
                    assertThat(f.get()).isEqualTo(500);
                }
            } finally {
                pool.shutdown();
            }
        }
        before.assertBack();
    }

    private static int runMany(DlpackSession session, int id, float[] expected) throws OrtException {
        int same = 0;
        try (Tensor x = input(id); Tensor pinned = Tensor.zeros(DataType.FLOAT32, 2, 16)) {
            for (int i = 0; i < 500; i++) {
                if (i % 2 == 0) {
                    try (Tensor y = session.run(Map.of("x", x)).get("y")) {
                        same += java.util.Arrays.equals(y.toFloatArray(), expected) ? 1 : 0;
                    }
                } else {
                    session.run(Map.of("x", x), Map.of("y", pinned));
                    same += java.util.Arrays.equals(pinned.toFloatArray(), expected) ? 1 : 0;
                }
            }
        }
        return same;
    }

    private static Tensor input(int id) {
        float[] v = new float[2 * 256];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) Math.sin(id * 1000 + i);
        }
        return Tensor.of(v, 2, 256);
    }
}
