package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Review experiments on batching: announcements, buffers aliased by outputs, cancels and deadlines while stacking. */
class BatchingUnderLoadTest {
    @BeforeAll
    static void module() {
        Models.pythonModule("review_batch", """
                import time
                import numpy as np
                import torch

                def make(mode):
                    def run(x):
                        if mode == "view":
                            return torch.from_dlpack(x)[:, 1:]   # a view of the batch buffer, off its start
                        if mode == "npview":
                            return np.from_dlpack(x)[:, ::2]     # a strided numpy view of it
                        if mode == "slow":
                            time.sleep(0.003)
                        if mode == "slowthree" and np.from_dlpack(x).shape[1] == 3:
                            time.sleep(0.8)
                        return np.from_dlpack(x) * 2
                    return run
                """);
    }

    private static float[] values(int request, int width) {
        float[] v = new float[width];
        for (int i = 0; i < width; i++) {
            v[i] = request * 1000f + i + 0.5f;
        }
        return v;
    }

    @Test
    void aBatchWaitingForAnnouncedCallsRunsOnceAnotherWorkerTookTheLastOfThem() throws Exception {
        try (PythonModel model = PythonModel.builder().python(Models.PY).factory("review_batch", "make", "slowthree")
                .input("x", DataType.FLOAT32, -1, -1).workers(2).batching(8, Duration.ofSeconds(3)).build();
             Tensor a = Tensor.of(values(1, 4), 1, 4);
             Tensor b = Tensor.of(values(2, 3), 1, 3)) {
            // two callers, each announced before it calls, each closing its announcement once answered
            long start = System.nanoTime();
            long[] done = new long[2];
            java.util.concurrent.CountDownLatch announced = new java.util.concurrent.CountDownLatch(2);
            Thread callerA = Thread.ofVirtual().start(() -> {
                try (PythonModel.Announcement coming = model.announce()) {
                    announced.countDown();
                    announced.await();
                    model.predict(a).close();
                    done[0] = System.nanoTime() - start;
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            Thread callerB = Thread.ofVirtual().start(() -> {
                try (PythonModel.Announcement coming = model.announce()) {
                    announced.countDown();
                    announced.await();
                    Thread.sleep(50); // reading its body: A's batch gathers meanwhile
                    model.predict(b).close();
                    done[1] = System.nanoTime() - start;
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            callerA.join();
            callerB.join();
            long aDone = done[0];
            long bDone = done[1];
            System.out.printf("announced, two keys, two workers: B after %.0f ms, A after %.0f ms (maxDelay 3000)%n",
                    bDone / 1e6, aDone / 1e6);
            // both announced calls have joined a batch once B is taken (B's call takes 0.8 s):
            // A's batch should run then, not wait for B's answer
            assertThat(Duration.ofNanos(aDone)).isLessThan(Duration.ofMillis(500));
        }
    }

    @Test
    void aRequestOfAnotherKeyGoesToAnIdleWorkerWhileABatchGathersNotAfterItsDelay() throws Exception {
        try (PythonModel model = PythonModel.builder().python(Models.PY).factory("review_batch", "make", "double")
                .input("x", DataType.FLOAT32, -1, -1).workers(2).batching(8, Duration.ofSeconds(3)).build();
             Tensor gathering = Tensor.of(values(1, 3), 1, 3);
             Tensor full = Tensor.of(new float[8 * 4], 8, 4)) {
            var first = model.submit(java.util.Map.of("x", gathering)); // one worker gathers its batch for 3 s
            Thread.sleep(100);
            long start = System.nanoTime();
            try (Tensor y = model.predict(full)) { // a full batch of another key: the idle worker runs it
                assertThat(y.shape()).containsExactly(8, 4);
            }
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(1500));
            first.get(10, java.util.concurrent.TimeUnit.SECONDS).values().forEach(Tensor::close);
        }
    }

    @Test
    void outputsThatViewTheBatchBufferKeepTheirOwnRowsAcrossLaterBatchesAndAfterClose() throws Exception {
        for (String mode : List.of("view", "npview")) {
            int exports = Dlpack.liveExports();
            long bytes = Dlpack.nativeBytesInUse();
            PythonModel model = PythonModel.builder().python(Models.PY).name(mode).factory("review_batch", "make", mode)
                    .input("x", DataType.FLOAT32, -1, 16).workers(2).batching(16, Duration.ofMillis(1)).maxQueue(5000).build();
            int n = 2000;
            Tensor[] outs = new Tensor[n];
            AtomicInteger failures = new AtomicInteger();
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int req = i;
                threads.add(Thread.ofVirtual().start(() -> {
                    try (Tensor x = Tensor.of(values(req, 16), 1, 16)) {
                        outs[req] = model.predict(x);
                    } catch (Throwable t) {
                        if (failures.incrementAndGet() == 1) {
                            t.printStackTrace(System.out);
                        }
                    }
                }));
            }
            for (Thread t : threads) {
                t.join();
            }
            ModelStats s = model.stats();
            System.out.printf("%s: %d of %d failed, stats %s%n", mode, failures.get(), n, s);
            assertThat(failures.get()).isZero();
            model.close();
            int wrong = 0;
            for (int i = 0; i < n; i++) {
                float[] v = values(i, 16);
                float[] expected = new float[mode.equals("view") ? 15 : 8];
                for (int j = 0; j < expected.length; j++) {
                    expected[j] = mode.equals("view") ? v[j + 1] : v[2 * j];
                }
                if (!Arrays.equals(outs[i].toFloatArray(), expected)) {
                    wrong++;
                }
            }
            System.out.printf("%s: %d wrong of %d, stats %s%n", mode, wrong, n, s);
            assertThat(wrong).isZero();
            // closed on virtual threads after the model closed: the deferred releases run at the next GIL holder
            List<Thread> closers = new ArrayList<>();
            for (Tensor t : outs) {
                closers.add(Thread.ofVirtual().start(t::close));
            }
            for (Thread t : closers) {
                t.join();
            }
            Models.assertReleasedSince(exports, bytes);
        }
    }

    @Test
    void requestsCancelledOrTimedOutWhileTheirBatchIsStackedLeaveEveryOtherAnswerIntact() throws Exception {
        for (boolean deadline : new boolean[] {false, true}) {
            int exports = Dlpack.liveExports();
            long bytes = Dlpack.nativeBytesInUse();
            PythonModel.Builder b = PythonModel.builder().python(Models.PY).name("stack-" + deadline)
                    .factory("review_batch", "make", "slow").input("x", DataType.FLOAT32, -1, 32)
                    .workers(2).batching(32, Duration.ofMillis(2)).maxQueue(5000);
            if (deadline) {
                b.timeout(Duration.ofMillis(8));
            }
            PythonModel model = b.build();
            int n = 1500;
            AtomicInteger wrong = new AtomicInteger();
            AtomicInteger answered = new AtomicInteger();
            AtomicInteger cancelled = new AtomicInteger();
            AtomicInteger timedOut = new AtomicInteger();
            ConcurrentLinkedQueue<Throwable> other = new ConcurrentLinkedQueue<>();
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int req = i;
                threads.add(Thread.ofVirtual().start(() -> {
                    float[] v = values(req, 32);
                    Tensor x = Tensor.of(v, 1, 32);
                    CompletableFuture<Map<String, Tensor>> f;
                    try {
                        f = model.submit(Map.of("x", x));
                    } catch (Throwable t) {
                        x.close();
                        other.add(t);
                        return;
                    }
                    if (req % 3 == 0) {
                        if (f.cancel(false)) {
                            x.close(); // the caller frees its input at once
                            cancelled.incrementAndGet();
                            return;
                        }
                    }
                    try {
                        Map<String, Tensor> out = f.join();
                        try (Tensor y = out.get("output")) {
                            x.close(); // the input goes before the output is read
                            float[] d = v.clone();
                            for (int j = 0; j < d.length; j++) {
                                d[j] *= 2;
                            }
                            if (!Arrays.equals(y.toFloatArray(), d)) {
                                wrong.incrementAndGet();
                            }
                            answered.incrementAndGet();
                        }
                    } catch (CancellationException e) {
                        cancelled.incrementAndGet();
                    } catch (CompletionException e) {
                        if (e.getCause() instanceof ModelTimeoutException) {
                            timedOut.incrementAndGet();
                        } else {
                            other.add(e);
                        }
                    } finally {
                        x.close();
                    }
                }));
            }
            for (Thread t : threads) {
                t.join();
            }
            model.close();
            ModelStats s = model.stats();
            System.out.printf("deadline %s: answered %d cancelled %d timedOut %d, stats %s%n", deadline,
                    answered.get(), cancelled.get(), timedOut.get(), s);
            assertThat(other).isEmpty();
            assertThat(wrong.get()).isZero();
            assertThat(s.answered()).isEqualTo(answered.get());
            assertThat(s.timedOut()).isEqualTo(timedOut.get());
            assertThat(s.requests()).isEqualTo(n);
            assertThat(s.requests()).isEqualTo(s.answered() + s.failed() + s.timedOut() + cancelled.get());
            Models.assertReleasedSince(exports, bytes);
        }
    }
}
