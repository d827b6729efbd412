package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Field;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Many platform and virtual callers on one torch model (a TorchScript file, or a factory with
 * {@link PythonModel.Builder#torchInputs()}), with and without batching and deadlines, some
 * cancelling or interrupted, the model closed under load: each answer holds its own rows, no
 * caller is left waiting, the counters settle, and nothing stays behind.
 */
class SchedulerStressTest {
    private static Path scripted;

    @BeforeAll
    static void models() {
        Models.pythonModule("stress_doubler", """
                import time
                import torch

                def make():
                    def run(x):
                        assert type(x) is torch.Tensor
                        if bool((x[:, 1] < 0).any()):
                            time.sleep(0.003)  # a slow call now and then: deadlines pass, queues grow
                        return x * 2
                    return run
                """);
        scripted = Models.save("stress-doubler.pt", """
                import torch

                class Doubler(torch.nn.Module):
                    def forward(self, x):
                        return x * 2

                torch.jit.save(torch.jit.trace(Doubler(), torch.zeros(3, 2, dtype=torch.float64)), path)
                """);
    }

    /**
     * @param source      {@code script} (TorchScript) or {@code factory} (torchInputs)
     * @param closeAfter  ms after which the model is closed under load; 0: closed once the callers are done
     * @param interrupts  whether the callers are interrupted now and then
     */
    @ParameterizedTest(name = "workers {0}, batch rows {1}, deadline {2} ms, {3}, close after {4} ms, interrupts {5}")
    @CsvSource({
        "1, 0, 0, factory, 0, false",
        "4, 0, 20, script, 0, true",
        "2, 8, 0, factory, 0, true",
        "3, 8, 20, script, 0, false",
        "2, 0, 0, script, 250, false",
        "4, 8, 20, factory, 250, true",
    })
    void everyCallerGetsItsOwnRowsOrAClearRefusalAndEveryCounterSettles(int workers, int batchRows, int deadlineMs,
            String source, int closeAfter, boolean interrupts) throws Exception {
        int exports = Dlpack.liveExports();
        long bytes = Dlpack.nativeBytesInUse();
        PythonModel.Builder b = PythonModel.builder().python(Models.PY).name("stress")
                .input("x", DataType.FLOAT64, -1, 2).output("y", DataType.FLOAT64, -1, 2)
                .workers(workers).maxQueue(100_000);
        if (source.equals("script")) {
            b.torchScript(scripted);
        } else {
            b.factory("stress_doubler", "make").torchInputs();
        }
        if (batchRows > 0) {
            b.batching(batchRows, Duration.ofNanos(200_000));
        }
        if (deadlineMs > 0) {
            b.timeout(Duration.ofMillis(deadlineMs));
        }
        PythonModel model = b.build();
        Load load = new Load(model, batchRows, closeAfter > 0);
        long until = System.nanoTime() + 700_000_000L;
        List<Thread> callers = new ArrayList<>();
        for (int t = 0; t < 40; t++) {
            callers.add((t < 6 ? Thread.ofPlatform() : Thread.ofVirtual()).start(() -> load.call(until)));
        }
        Thread interrupter = !interrupts ? null : Thread.ofPlatform().start(() -> {
            ThreadLocalRandom rnd = ThreadLocalRandom.current();
            while (System.nanoTime() < until) {
                callers.get(rnd.nextInt(callers.size())).interrupt();
                spin(200_000);
            }
        });
        long closing = 0;
        if (closeAfter > 0) {
            Thread.sleep(closeAfter);
            long start = System.nanoTime();
            model.close();
            closing = System.nanoTime() - start;
        }
        for (Thread t : callers) {
            assertThat(t.join(Duration.ofSeconds(30))).as("a caller still waits").isTrue();
        }
        if (interrupter != null) {
            interrupter.join();
        }
        assertThat(load.unexpected).isEmpty();
        assertThat(load.wrong).as("answers with rows of another request").hasValue(0);
        assertThat(Duration.ofNanos(closing)).isLessThan(Duration.ofSeconds(5));
        Scheduler scheduler = (Scheduler) field(model, "scheduler");
        // A request leaves the counts once its future's callbacks ran: a deadline's thread may still be at it.
        for (int i = 0; i < 100 && scheduler.inFlight() != 0; i++) {
            Thread.sleep(10);
        }
        assertThat(scheduler.inFlight()).as("requests in flight").isZero();
        assertThat(((AtomicInteger) field(scheduler, "claimed")).get()).as("requests claimed by batches").isZero();
        assertThat(scheduler.queued()).isZero();
        ModelStats s = model.stats();
        assertThat(s.requests()).as("%s, cancelled %d", s, load.cancelled.get())
                .isEqualTo(s.answered() + s.failed() + s.timedOut() + load.cancelled.get());
        assertThat(s.answered()).isPositive();
        model.close();
        Thread.sleep(50); // outputs closed on virtual threads: their deleters wait for the next GIL holder
        Models.assertReleasedSince(exports, bytes);
    }

    /** The callers' loop: each call's rows are its own numbers, some calls are cancelled, all are checked. */
    private static final class Load {
        final PythonModel model;
        final int batchRows;
        final boolean closing;
        final AtomicInteger next = new AtomicInteger();
        final AtomicLong cancelled = new AtomicLong();
        final AtomicLong wrong = new AtomicLong();
        final ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();

        Load(PythonModel model, int batchRows, boolean closing) {
            this.model = model;
            this.batchRows = batchRows;
            this.closing = closing;
        }

        void call(long until) {
            ThreadLocalRandom rnd = ThreadLocalRandom.current();
            for (int i = 0; i < 2_000 && System.nanoTime() < until; i++) {
                Thread.interrupted();
                int rows = batchRows > 0 ? 1 + rnd.nextInt(3) : 1;
                boolean slow = rnd.nextInt(50) == 0;
                int id = next.incrementAndGet();
                double[] in = new double[rows * 2];
                for (int r = 0; r < rows; r++) {
                    in[2 * r] = id * 10.0 + r;
                    in[2 * r + 1] = slow ? -1 : 1;
                }
                try (Tensor x = Tensor.of(in, rows, 2)) {
                    if (rnd.nextBoolean()) {
                        try (Tensor y = model.predict(x)) {
                            check(y, in);
                        } catch (CancellationException interrupted) {
                            cancelled.incrementAndGet();
                        }
                    } else {
                        CompletableFuture<Map<String, Tensor>> f = model.submit(Map.of("x", x));
                        if (rnd.nextInt(8) == 0 && f.cancel(true)) {
                            cancelled.incrementAndGet();
                        }
                        await(f, in);
                    }
                } catch (ModelTimeoutException passed) {
                    // a deadline passed: counted as timed out
                } catch (IllegalStateException closed) {
                    if (!closing || !model.isClosed()) {
                        unexpected.add(closed);
                    }
                    return;
                } catch (RuntimeException | Error e) {
                    unexpected.add(e);
                    return;
                }
            }
        }

        private void await(CompletableFuture<Map<String, Tensor>> f, double[] in) {
            try {
                try (Tensor y = f.get(20, TimeUnit.SECONDS).get("y")) {
                    check(y, in);
                }
            } catch (InterruptedException e) {
                if (f.cancel(false)) {
                    cancelled.incrementAndGet();
                } else {
                    try (Tensor y = f.join().get("y")) {
                        check(y, in);
                    } catch (CancellationException | CompletionException settled) {
                        expected(settled.getCause());
                    }
                }
            } catch (CancellationException e) {
                // cancelled above
            } catch (ExecutionException e) {
                expected(e.getCause());
            } catch (TimeoutException e) {
                unexpected.add(new AssertionError("a request not answered within 20 s", e));
            }
        }

        private void expected(Throwable cause) {
            if (cause != null && !(cause instanceof ModelTimeoutException)
                    && !(closing && cause instanceof IllegalStateException)) {
                unexpected.add(cause);
            }
        }

        private void check(Tensor y, double[] in) {
            double[] got = y.toDoubleArray();
            for (int i = 0; i < in.length; i++) {
                if (got.length != in.length || got[i] != 2 * in[i]) {
                    wrong.incrementAndGet();
                    return;
                }
            }
        }
    }

    /**
     * An admission skips waking a parked worker while an idle one looks at the queue (it polls the
     * queue next): requests that come within the look, at its end and just after it, from one or
     * several callers, are each taken, whatever the number of workers. The scheduler alone (its
     * workers answer at once), so that the looks and admissions meet hundreds of thousands of times.
     */
    @ParameterizedTest(name = "workers {0}, callers {1}")
    @CsvSource({"1, 1", "2, 1", "4, 1", "2, 2", "4, 3"})
    void noRequestIsLeftInTheQueueWithEveryWorkerParked(int workers, int callers) throws Exception {
        Scheduler scheduler = new Scheduler("look", new Recorder("look", null), 1_000, 0, 0, 0);
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            threads.add(Thread.ofPlatform().start(() -> {
                for (List<Request<?>> batch; (batch = scheduler.next()) != null; ) {
                    batch.forEach(r -> r.answer(new ModelResult(Map.of(), Set.of())));
                }
            }));
        }
        AtomicLong unanswered = new AtomicLong();
        AtomicLong answered = new AtomicLong();
        long until = System.nanoTime() + 700_000_000L;
        List<Thread> calling = new ArrayList<>();
        for (int c = 0; c < callers; c++) {
            calling.add(Thread.ofPlatform().start(() -> {
                ThreadLocalRandom rnd = ThreadLocalRandom.current();
                while (System.nanoTime() < until) {
                    Request<ModelResult> r = scheduler.admit(List.of(), 1, -1, null, Function.identity());
                    long give = System.nanoTime() + 5_000_000_000L;
                    while (!r.isDone() && System.nanoTime() - give < 0) { // not parked: calls again at once
                        Thread.onSpinWait();
                    }
                    if (!r.isDone()) {
                        unanswered.incrementAndGet();
                        return;
                    }
                    answered.incrementAndGet();
                    int p = rnd.nextInt(10);
                    spin(p < 6 ? 0 : p < 9 ? Look.NANOS - 5_000 + rnd.nextLong(10_000) : rnd.nextLong(3 * Look.NANOS));
                }
            }));
        }
        for (Thread t : calling) {
            assertThat(t.join(Duration.ofSeconds(30))).isTrue();
        }
        scheduler.close();
        for (Thread t : threads) {
            assertThat(t.join(Duration.ofSeconds(5))).as("a worker stops once closed").isTrue();
        }
        assertThat(unanswered).as("requests left in the queue").hasValue(0);
        assertThat(answered.get()).isPositive();
    }

    private static void spin(long nanos) {
        long end = System.nanoTime() + nanos;
        while (System.nanoTime() - end < 0) {
            Thread.onSpinWait();
        }
    }

    private static Object field(Object o, String name) throws ReflectiveOperationException {
        Field f = o.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(o);
    }
}
