package io.github.dlpack4j.onnxruntime;

import static io.github.dlpack4j.onnxruntime.Models.PY;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Inputs, outputs and sessions closed in any order: nothing freed under ORT or Java, nothing leaked. */
class LifetimeTest {
    @Test
    void anInputClosedRightAfterRunLeavesTheOutputsIntactAndNothingBehind() throws OrtException {
        Baseline before = Baseline.now();
        PY.exec("x_in = torch.arange(6, dtype=torch.float32).reshape(2, 3)");
        Map<String, Tensor> out;
        try (OrtSession s = Models.session("identity('identity_f32', T.FLOAT)")) {
            ManagedTensor x = Models.fromPython("x_in");
            out = DlpackSession.of(s).run(Map.of("x", x.tensor()));
            x.close();
        }
        PY.exec("del x_in\ngc.collect()");
        try (Tensor y = out.get("y")) {
            assertThat(y.toFloatArray()).containsExactly(0, 1, 2, 3, 4, 5);
        }
        before.assertBack();
    }

    @Test
    void aTensorClosedBeforeItsOnnxTensorKeepsItsMemoryUntilTheHandleIsClosed() throws OrtException {
        Baseline before = Baseline.now();
        try (OrtSession s = Models.session("identity('identity_f32', T.FLOAT)")) {
            Tensor x = Tensor.of(new float[] {1, 2, 3}, 1, 3);
            SharedOnnxTensor shared = OrtTensors.toOnnxTensor(x);
            x.close();
            assertThat(Baseline.now().bytes()).as("the share holds the memory").isGreaterThan(before.bytes());
            try (OrtSession.Result r = s.run(Map.of("x", shared.onnxTensor()))) {
                assertThat(((OnnxTensor) r.get(0)).getFloatBuffer().array()).containsExactly(1, 2, 3);
            }
            shared.close();
            shared.close();
            assertThat(shared.onnxTensor().isClosed()).isTrue();
        }
        before.assertBack();
    }

    @Test
    void anUnclosedHandleLetsGoOfTheMemoryOnceItsOnnxTensorIsCollected() throws OrtException {
        Baseline before = Baseline.now();
        Tensor x = Tensor.of(new float[] {1, 2, 3});
        OrtTensors.toOnnxTensor(x); // neither the handle nor its OnnxTensor is kept
        x.close();
        before.assertBack();
    }

    @Test
    void outputsClosedInAnyOrderAfterTheSessionWasClosedStillHoldOrtsResults() throws OrtException {
        Baseline before = Baseline.now();
        Map<String, Tensor> out;
        try (OrtSession s = Models.session("two_in_two_out('two')");
             Tensor a = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
            out = DlpackSession.of(s).run(Map.of("a", a, "b", a));
        }
        Tensor product = out.get("product");
        Models.toNumpy("x_sum", out.get("sum"));
        out.get("sum").close();                                   // numpy still holds it
        assertThat(product.toFloatArray()).containsExactly(1, 4, 9, 16, 25, 36);
        product.close();
        assertThatThrownBy(product::toFloatArray).isInstanceOf(IllegalStateException.class);
        assertThat(Models.isTrue("np.array_equal(x_sum, np.arange(1, 7, dtype=np.float32).reshape(2, 3) * 2)"))
                .isTrue();
        PY.exec("del x_sum\ngc.collect()");
        before.assertBack();
    }

    @Test
    void anOrtTensorTakenOverClosesWhenTheLastHolderLetsGo() throws OrtException {
        try (OrtSession s = Models.session("identity('identity_f32', T.FLOAT)");
             Tensor x = Tensor.of(new float[] {5, 6, 7}, 1, 3)) {
            OnnxTensor y;
            try (SharedOnnxTensor in = OrtTensors.toOnnxTensor(x)) {
                y = (OnnxTensor) s.run(Map.of("x", in.onnxTensor())).get(0); // the Result is not closed: y is ours
            }
            Tensor t = OrtTensors.toTensor(y);
            Tensor share = t.share();
            t.close();
            assertThat(y.isClosed()).as("the share holds it").isFalse();
            assertThat(share.toFloatArray()).containsExactly(5, 6, 7);
            share.close();
            assertThat(y.isClosed()).isTrue();
        }
    }

    @Test
    void aHundredThousandRunsKeepTheResidentSetFlat() throws Exception {
        Baseline before = Baseline.now();
        try (OrtSession s = Models.session("identity('identity_f32', T.FLOAT)");
             Tensor x = Tensor.of(new float[] {1, 2, 3}, 1, 3)) {
            DlpackSession session = DlpackSession.of(s);
            double sum = 0;
            long rssAfterWarmUp = 0;
            for (int i = 0; i < 100_000; i++) {
                if (i == 50_000) { // the heap and the JIT's code have grown to their working size by now
                    System.gc();
                    rssAfterWarmUp = rssKiB();
                }
                try (Tensor y = session.run(Map.of("x", x)).get("y")) {
                    sum += y.getDouble(0, 2);
                }
            }
            System.gc();
            long growthKiB = rssKiB() - rssAfterWarmUp;
            assertThat(sum).isEqualTo(300_000);
            // A leak of 340 bytes a run would be 16 MiB here.
            assertThat(growthKiB).as("RSS growth over the last 50,000 runs, KiB").isLessThan(16 * 1024);
        }
        before.assertBack();
    }

    private static long rssKiB() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("\\D", ""));
            }
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }
}
