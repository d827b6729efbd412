package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;

import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

import org.junit.jupiter.api.Test;

class EventsTest {
    @Test
    void aRecordingWithNoSettingsHasTheModelsBatchRejectedAndTimedOutEvents() throws Exception {
        Models.pythonModule("jfr_gate", """
                import threading
                import numpy as np

                started = threading.Event()
                release = threading.Event()

                def make():
                    def run(x):
                        if np.from_dlpack(x)[0, 0] < 0:  # a slow request: held until the test lets it go
                            started.set()
                            release.wait(30)
                        return np.from_dlpack(x) * 2
                    return run
                """);
        Path file = Models.file("model-events.jfr");
        try (Recording recording = new Recording()) {   // no settings: the events' own defaults
            recording.start();
            try (PythonModel model = PythonModel.builder().python(Models.PY).name("recorded")
                    .factory("jfr_gate", "make").input("x", DataType.FLOAT32, -1, 2)
                    .batching(4, Duration.ofMillis(100)).maxQueue(1).timeout(Duration.ofMillis(300)).build();
                 Tensor slow = Tensor.of(new float[] {-1, -1}, 1, 2);
                 Tensor fast = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2)) {
                model.predict(fast).close();
                CompletableFuture<Map<String, Tensor>> held = model.submit(Map.of("x", slow));
                Models.await("__import__('jfr_gate').started.is_set()");
                CompletableFuture<Map<String, Tensor>> queued = model.submit(Map.of("x", fast));
                assertThatThrownBy(() -> model.predict(fast)).isInstanceOf(ModelOverloadedException.class);
                assertThatThrownBy(held::join).cause().isInstanceOf(ModelTimeoutException.class);
                assertThatThrownBy(queued::join).cause().isInstanceOf(ModelTimeoutException.class);
                Models.PY.exec("import jfr_gate\njfr_gate.release.set()");
            }
            recording.stop();
            recording.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        List<RecordedEvent> batches = named(events, "io.github.dlpack4j.model.Batch");
        assertThat(batches).isNotEmpty();
        RecordedEvent first = batches.getFirst();
        assertThat(first.getString("model")).isEqualTo("recorded");
        assertThat(first.getLong("rows")).isEqualTo(2);
        assertThat(first.getInt("requests")).isEqualTo(1);
        assertThat(first.getDuration("queueWait")).isGreaterThanOrEqualTo(Duration.ofMillis(100));
        assertThat(first.getDuration("runTime")).isPositive();
        assertThat(named(events, "io.github.dlpack4j.model.Rejected")).hasSize(1)
                .allSatisfy(e -> assertThat(e.getInt("maxQueue")).isEqualTo(1));
        List<RecordedEvent> timedOut = named(events, "io.github.dlpack4j.model.TimedOut");
        assertThat(timedOut).hasSize(2).allSatisfy(e -> assertThat(e.getString("model")).isEqualTo("recorded"));
        assertThat(timedOut.stream().map(e -> e.getBoolean("running"))).containsExactlyInAnyOrder(true, false);
    }

    private static List<RecordedEvent> named(List<RecordedEvent> events, String name) {
        return events.stream().filter(e -> e.getEventType().getName().equals(name)).toList();
    }
}
