package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import io.github.dlpack4j.Tensor;

import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

import org.junit.jupiter.api.Test;

/** What a caller of submit and predict sees: a full queue at once, and a virtual thread that waits without pinning. */
class CallerTest {
    @Test
    void submitThrowsAFullQueueAtOnceAsPredictDoes() throws Exception {
        Models.pythonModule("submit_gate", """
                import threading
                import numpy as np

                started, release = threading.Event(), threading.Event()


                def make():
                    def run(x):
                        started.set()
                        release.wait(30)  # lets the GIL go while it waits
                        return np.from_dlpack(x)
                    return run
                """);
        try (PythonModel model = PythonModel.builder().python(Models.PY).factory("submit_gate", "make").maxQueue(1).build();
             Tensor x = Tensor.of(new float[] {1}, 1)) {
            CompletableFuture<Map<String, Tensor>> running = model.submit(Map.of("x", x));
            Models.await("__import__('submit_gate').started.is_set()");
            CompletableFuture<Map<String, Tensor>> waiting = model.submit(Map.of("x", x));
            long start = System.nanoTime();
            assertThatThrownBy(() -> model.submit(Map.of("x", x))).isInstanceOf(ModelOverloadedException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(500));
            Models.PY.exec("import submit_gate\nsubmit_gate.release.set()");
            running.join().values().forEach(Tensor::close);
            waiting.join().values().forEach(Tensor::close);
            ModelStats s = model.stats();
            assertThat(s.rejected()).isEqualTo(1);
            assertThat(s.requests()).isEqualTo(2);
        }
    }

    @Test
    void virtualThreadsWaitingForTheModelDoNotPinTheirCarriers() throws Exception {
        String slow = "import time\nimport numpy as np\ndef make():\n    def run(x):\n        time.sleep(0.002)\n"
                + "        return np.from_dlpack(x) + 1\n    return run\n";
        Path file = Models.file("pinned.jfr");
        int answered = 0;
        try (PythonModel model = PythonModel.builder().python(Models.PY).source(slow, "make").maxQueue(1_000).build();
             Recording recording = new Recording()) {
            // A first call initializes the classes a call needs: a virtual thread waiting for another
            // thread's class initialization is pinned, whatever the runtime does.
            try (ExecutorService first = Executors.newVirtualThreadPerTaskExecutor()) {
                first.submit(() -> {
                    try (Tensor x = Tensor.of(new double[] {0}, 1)) {
                        model.predict(x).close();
                    }
                }).get();
            }
            recording.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
            recording.start();
            try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<Double>> answers = new ArrayList<>();
                for (int i = 0; i < 200; i++) {
                    double v = i;
                    answers.add(threads.submit(() -> {
                        try (Tensor x = Tensor.of(new double[] {v}, 1);
                             Tensor y = model.predict(x)) {
                            return y.getDouble(0);
                        }
                    }));
                }
                for (int i = 0; i < answers.size(); i++) {
                    assertThat(answers.get(i).get()).isEqualTo(i + 1.0);
                    answered++;
                }
            }
            recording.stop();
            recording.dump(file);
        }
        assertThat(answered).isEqualTo(200);
        List<RecordedEvent> pinned = RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().equals("jdk.VirtualThreadPinned")).toList();
        assertThat(pinned).as("pinned virtual threads").isEmpty();
    }
}
