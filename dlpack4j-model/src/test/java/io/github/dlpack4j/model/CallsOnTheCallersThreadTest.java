package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Review experiments on the calls a platform caller runs on its own thread (callHere, enter/leave, slots). */
class CallsOnTheCallersThreadTest {
    @BeforeAll
    static void module() {
        Models.pythonModule("review_here", """
                import time
                import numpy as np
                import torch

                def make(mode):
                    def run(x):
                        if mode == "slow":
                            time.sleep(0.002)
                        if mode == "identity":
                            return torch.from_dlpack(x)
                        if mode == "float64":
                            return np.from_dlpack(x).astype(np.float64)
                        return np.from_dlpack(x) * 2
                    return run
                """);
    }

    private static PythonModel model(String mode, int workers) {
        return PythonModel.builder().python(Models.PY).name("review-" + mode).factory("review_here", "make", mode)
                .workers(workers).build();
    }

    private static float[] values(int caller, int call) {
        return Models.callValues(caller, call, 64);
    }

    @Test
    void aQueuedCallIsNotStarvedByPlatformCallersRunningTheirOwnCalls() throws Exception {
        try (PythonModel model = model("double", 1)) {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger wrong = new AtomicInteger();
            List<Thread> platform = new ArrayList<>();
            for (int c = 0; c < 3; c++) {
                int caller = c;
                platform.add(Thread.ofPlatform().start(() -> {
                    for (int i = 0; !stop.get() && i < 1_000_000; i++) {
                        float[] v = values(caller, i % 1000);
                        try (Tensor x = Tensor.of(v, 64); Tensor y = model.predict(x)) {
                            if (!java.util.Arrays.equals(y.toFloatArray(), Models.doubled(v))) {
                                wrong.incrementAndGet();
                            }
                        }
                    }
                }));
            }
            Thread.sleep(300);
            AtomicLong slowest = new AtomicLong();
            Thread virtual = Thread.ofVirtual().start(() -> {
                for (int i = 0; i < 20; i++) {
                    float[] v = values(99, i);
                    long start = System.nanoTime();
                    try (Tensor x = Tensor.of(v, 64); Tensor y = model.predict(x)) {
                        slowest.accumulateAndGet(System.nanoTime() - start, Math::max);
                        if (!java.util.Arrays.equals(y.toFloatArray(), Models.doubled(v))) {
                            wrong.incrementAndGet();
                        }
                    }
                }
            });
            boolean done = virtual.join(Duration.ofSeconds(20));
            stop.set(true);
            for (Thread t : platform) {
                t.join();
            }
            virtual.join();
            System.out.printf("starvation: virtual caller's slowest call %.1f ms (done within 20 s: %s), stats %s%n",
                    slowest.get() / 1e6, done, model.stats());
            assertThat(wrong.get()).isZero();
            assertThat(done).as("20 calls of a virtual thread within 20 s").isTrue();
            assertThat(Duration.ofNanos(slowest.get())).isLessThan(Duration.ofMillis(500));
        }
    }

    @Test
    void closeRacingCallersOnTheirOwnThreadsAnswersOrRefusesEachExactlyAndFreesEverything() throws Exception {
        for (int round = 0; round < 5; round++) {
            int exports = Dlpack.liveExports();
            long bytes = Dlpack.nativeBytesInUse();
            PythonModel model = model(round % 2 == 0 ? "identity" : "slow", 2);
            AtomicInteger answered = new AtomicInteger();
            AtomicInteger refused = new AtomicInteger();
            AtomicInteger wrong = new AtomicInteger();
            ConcurrentLinkedQueue<Throwable> other = new ConcurrentLinkedQueue<>();
            ConcurrentLinkedQueue<Object[]> kept = new ConcurrentLinkedQueue<>(); // outputs read after close
            List<Thread> threads = new ArrayList<>();
            boolean identity = round % 2 == 0;
            for (int c = 0; c < 8; c++) {
                int caller = c;
                Runnable body = () -> {
                    for (int i = 0; i < 100_000; i++) {
                        float[] v = values(caller, i % 1000);
                        try (Tensor x = Tensor.of(v, 64)) {
                            Tensor y = model.predict(x);
                            answered.incrementAndGet();
                            if (i % 10 == 0) {
                                kept.add(new Object[] {y, identity ? v : Models.doubled(v)});
                            } else {
                                try (y) {
                                    if (!java.util.Arrays.equals(y.toFloatArray(), identity ? v : Models.doubled(v))) {
                                        wrong.incrementAndGet();
                                    }
                                }
                            }
                        } catch (IllegalStateException closed) {
                            refused.incrementAndGet();
                            return;
                        } catch (Throwable t) {
                            other.add(t);
                            return;
                        }
                    }
                };
                threads.add(caller % 2 == 0 ? Thread.ofPlatform().start(body) : Thread.ofVirtual().start(body));
            }
            Thread.sleep(200 + round * 37);
            model.close();
            for (Thread t : threads) {
                assertThat(t.join(Duration.ofSeconds(30))).isTrue();
            }
            ModelStats s = model.stats();
            for (Object[] k : kept) {
                try (Tensor y = (Tensor) k[0]) {
                    if (!java.util.Arrays.equals(y.toFloatArray(), (float[]) k[1])) {
                        wrong.incrementAndGet();
                    }
                }
            }
            System.out.printf("close race round %d: answered %d refused %d kept %d, stats %s%n", round,
                    answered.get(), refused.get(), kept.size(), s);
            assertThat(other).isEmpty();
            assertThat(wrong.get()).isZero();
            assertThat(s.answered()).isEqualTo(answered.get());
            assertThat(s.requests()).isEqualTo(s.answered() + s.failed());
            assertThat(s.failed()).isZero();
            Models.assertReleasedSince(exports, bytes);
        }
    }

    @Test
    void anOutputThatBreaksTheSignatureOnTheCallersThreadLeaksNothingAndCountsOnce() {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        try (PythonModel model = PythonModel.builder().python(Models.PY).factory("review_here", "make", "float64")
                .output("y", DataType.FLOAT32, 64).build()) {
            for (int i = 0; i < 200; i++) {
                try (Tensor x = Tensor.of(values(1, i), 64)) {
                    assertThatThrownBy(() -> model.predict(x)).isInstanceOf(IllegalStateException.class)
                            .hasMessageContaining("output y");
                }
            }
            ModelStats s = model.stats();
            assertThat(s.requests()).isEqualTo(200);
            assertThat(s.failed()).isEqualTo(200);
            assertThat(s.batches()).isEqualTo(200);
        }
        Models.assertReleasedSince(exports, bytes);
    }

    @Test
    void anInterruptedPlatformCallerRunningItsOwnCallGetsItsAnswerWithItsInterruptStatus() throws Exception {
        try (PythonModel model = model("double", 1)) {
            float[][] got = new float[1][];
            boolean[] flag = new boolean[1];
            Thread t = Thread.ofPlatform().start(() -> {
                Thread.currentThread().interrupt();
                try (Tensor x = Tensor.of(values(3, 3), 64); Tensor y = model.predict(x)) {
                    got[0] = y.toFloatArray();
                }
                flag[0] = Thread.currentThread().isInterrupted();
            });
            t.join();
            assertThat(got[0]).containsExactly(Models.doubled(values(3, 3)));
            assertThat(flag[0]).isTrue();
        }
    }

    @Test
    void aCallerInsideAGilScopeRunsOrWaitsWithoutDeadlockAmongOtherCallers() throws Exception {
        try (PythonModel model = model("slow", 1)) {
            AtomicInteger wrong = new AtomicInteger();
            List<Thread> threads = new ArrayList<>();
            for (int c = 0; c < 6; c++) {
                int caller = c;
                Runnable call = () -> {
                    for (int i = 0; i < 40; i++) {
                        if (!Models.answersDoubled(model, caller, i, 64)) {
                            wrong.incrementAndGet();
                        }
                    }
                };
                Runnable body = caller < 2 ? () -> Models.PY.withGil(call) : call;
                threads.add(caller % 3 == 2 ? Thread.ofVirtual().start(body) : Thread.ofPlatform().start(body));
            }
            for (Thread t : threads) {
                assertThat(t.join(Duration.ofSeconds(60))).as("no deadlock").isTrue();
            }
            assertThat(wrong.get()).isZero();
            assertThat(model.stats().answered()).isEqualTo(240);
        }
    }
}
