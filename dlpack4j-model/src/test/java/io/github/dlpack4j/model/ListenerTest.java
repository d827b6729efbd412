package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

import io.github.dlpack4j.Tensor;

import org.junit.jupiter.api.Test;

class ListenerTest {
    @Test
    void theListenerHearsWhatTheStatsCountAsItHappens() {
        List<String> heard = new CopyOnWriteArrayList<>();
        ModelListener listener = new ModelListener() {
            @Override
            public void waited(long nanos) {
                heard.add("waited");
            }

            @Override
            public void ran(long rows, long nanos) {
                heard.add("ran " + rows + (nanos >= 50_000_000L ? " slow" : " fast"));
            }

            @Override
            public void answered() {
                heard.add("answered");
            }

            @Override
            public void failed() {
                heard.add("failed");
            }
        };
        try (PythonModel model = PythonModel.builder().python(Models.PY).source(Models.SLOW_OR_FAILING, "make", 0.05).listener(listener).build();
             Tensor good = Tensor.of(new float[] {1}, 1);
             Tensor bad = Tensor.of(new float[] {-1}, 1)) {
            model.predict(good).close();
            assertThatThrownBy(() -> model.predict(bad)).isInstanceOf(RuntimeException.class);
        }
        assertThat(heard).containsExactly("waited", "ran 1 slow", "answered", "waited", "ran 1 slow", "failed");
    }

    @Test
    void aListenerThatThrowsFailsNoCall() {
        ModelListener throwing = new ModelListener() {
            @Override
            public void answered() {
                throw new IllegalStateException("a broken meter");
            }
        };
        try (PythonModel model = PythonModel.builder().python(Models.PY).source(Models.SLOW_OR_FAILING, "make", 0.05).listener(throwing).build();
             Tensor good = Tensor.of(new float[] {1}, 1);
             Tensor y = model.predict(good)) {
            assertThat(y.toFloatArray()).containsExactly(1f);
            assertThat(model.stats().answered()).isEqualTo(1);
        }
    }

    @Test
    void queuedCountsTheRequestsWaitingBehindARunningCallAndIsClosedFollowsClose() throws Exception {
        PythonModel model = PythonModel.builder().python(Models.PY).source(Models.SLOW_OR_FAILING, "make", 0.05).workers(1).build();
        try (Tensor good = Tensor.of(new float[] {1}, 1)) {
            assertThat(model.queued()).isZero();
            List<CompletableFuture<Map<String, Tensor>>> calls = new CopyOnWriteArrayList<>();
            for (int i = 0; i < 4; i++) {
                calls.add(model.submit(Map.of("input", good)));
            }
            assertThat(model.queued()).isBetween(1, 4);
            for (CompletableFuture<Map<String, Tensor>> c : calls) {
                c.get().values().forEach(Tensor::close);
            }
            assertThat(model.queued()).isZero();
            assertThat(model.isClosed()).isFalse();
        } finally {
            model.close();
        }
        assertThat(model.isClosed()).isTrue();
    }
}
