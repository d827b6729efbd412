package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.python.interpreter.PendingReleases;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The deleters of Python producers' tensors closed on threads that do not hold the GIL. */
class DeferredDeleterTest {
    static final Python PY = Python.start();

    static {
        PY.exec("import numpy as np, weakref, gc");
    }

    /** Imports {@code expression}'s value (bound to no Python name, so the import alone keeps it). */
    private static ManagedTensor importOf(String expression) {
        try (PyObject o = PY.eval(expression)) {
            return PythonDlpack.fromDlpack(o);
        }
    }

    /** Runs {@code action} on a new platform thread, which never holds the GIL, and waits for it. */
    private static void onThreadWithoutGil(Runnable action) throws InterruptedException {
        Thread t = Thread.ofPlatform().start(action);
        t.join(60_000);
        assertThat(t.isAlive()).isFalse();
    }

    @Test
    void anArrayClosedWithoutTheGilIsReleasedWithin100MillisecondsWithNoOtherPythonCall() throws Exception {
        assertThat(millisFromCloseWithoutTheGilToRelease(0)).as("milliseconds from close to release").isLessThan(100);
    }

    @Test
    void anArrayClosedWithoutTheGilAfterASecondOfQuietIsStillReleasedWithNoOtherPythonCall() throws Exception {
        // Nothing queued for longer than the flusher looks: it parks until the close wakes it.
        assertThat(millisFromCloseWithoutTheGilToRelease(1_500)).as("milliseconds from close to release").isLessThan(5_000);
    }

    /**
     * Imports a numpy array, waits {@code quietMillis}, closes the import on a thread without the
     * GIL, and returns how long numpy took to free the array, with no Python call meanwhile: the
     * release comes from the deferred queue alone. Fails if it took more than 5 s.
     */
    private static long millisFromCloseWithoutTheGilToRelease(long quietMillis) throws Exception {
        CountDownLatch released = new CountDownLatch(1);
        try (PyObject signal = PY.function(args -> {
            released.countDown();
            return null;
        })) {
            PY.setGlobal("signal_released", signal);
            ManagedTensor m = importOf("(lambda a: (weakref.finalize(a, signal_released), a)[1])(np.arange(1000.0))");
            Thread.sleep(quietMillis);
            long[] closed = new long[1];
            onThreadWithoutGil(() -> {
                m.close();
                closed[0] = System.nanoTime();
            });
            assertThat(released.await(5, TimeUnit.SECONDS)).as("numpy's array released").isTrue();
            return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closed[0]);
        }
    }

    @Test
    void closeDoesNotWaitForTheGilThatAnotherThreadHolds() throws Exception {
        ManagedTensor m = importOf("np.arange(10.0)");
        CountDownLatch inScope = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        Thread holder = Thread.ofPlatform().start(() -> PY.withGil(() -> {
            inScope.countDown();
            try {
                closed.await(10, TimeUnit.SECONDS); // holds the GIL until the close returned
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        assertThat(inScope.await(10, TimeUnit.SECONDS)).isTrue();
        long start = System.nanoTime();
        onThreadWithoutGil(() -> {
            m.close();
            closed.countDown();
        });
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("milliseconds to close").isLessThan(5_000);
        holder.join(10_000);
        assertThat(holder.isAlive()).isFalse();
    }

    @Test
    void closingEightArraysOf64MiBWithoutTheGilNeverLeavesMoreThanTheBoundPending() throws Exception {
        long mib64 = 64L << 20;
        assertThat(PendingReleases.MAX_DELETER_BYTES).isEqualTo(mib64);
        long before = ProcessMemory.residentKiB();
        List<ManagedTensor> imports = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            imports.add(importOf("np.full(16 * 1024 * 1024, " + i + ", dtype=np.float32)")); // 64 MiB, touched
        }
        long loaded = residentKiBWithoutGc();
        assertThat(loaded - before).as("KiB resident with 8 arrays imported").isGreaterThan(7 * 64 * 1024);
        long[] mostPending = new long[1];
        long[] afterCloses = new long[1];
        onThreadWithoutGil(() -> {
            for (ManagedTensor m : imports) {
                m.close();
                mostPending[0] = Math.max(mostPending[0], PendingReleases.pendingDeleterBytes());
            }
            afterCloses[0] = residentKiBWithoutGc(); // before the flusher's 20 ms are up, most likely
        });
        assertThat(mostPending[0]).as("bytes pending after a close").isLessThanOrEqualTo(mib64);
        // The bound's 64 MiB at most, and 32 MiB for everything else.
        assertThat(afterCloses[0] - before).as("KiB resident right after the closes").isLessThan((64 + 32) * 1024);
    }

    @Test
    void manySmallArraysClosedWithoutTheGilNeverQueueMoreThanTheEntryBound() throws Exception {
        List<ManagedTensor> imports = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            imports.add(importOf("np.arange(4.0)"));
        }
        int[] most = new int[1];
        onThreadWithoutGil(() -> {
            for (ManagedTensor m : imports) {
                m.close();
                most[0] = Math.max(most[0], PendingReleases.pendingDeleters());
            }
        });
        assertThat(most[0]).as("deleters queued after a close").isPositive()
                .isLessThanOrEqualTo(PendingReleases.MAX_DELETERS);
    }

    /** A ctypes producer whose deleter raises (ctypes reports it as unraisable and goes on). */
    private static final String RAISING_PRODUCER = CtypesDlpack.STRUCTS + """
            raising_calls = []
            def raising_deleter(p):
                raising_calls.append(p)
                raise RuntimeError('a deleter that raises')
            RAISING = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(raising_deleter)
            raising_keep = []
            def raising_capsule():
                return versioned_capsule([1, 2], RAISING, raising_keep)
            """;

    @Test
    void aDeleterThatRaisesDoesNotLoseTheOthers() throws Exception {
        PY.exec(RAISING_PRODUCER);
        AtomicInteger released = new AtomicInteger();
        try (PyObject signal = PY.function(args -> {
            released.incrementAndGet();
            return null;
        })) {
            PY.setGlobal("count_released", signal);
            String watched = "(lambda a: (weakref.finalize(a, count_released), a)[1])(np.arange(3.0))";
            List<ManagedTensor> imports = List.of(importOf(watched), importOf("raising_capsule()"), importOf(watched),
                    importOf("raising_capsule()"), importOf(watched));
            AtomicInteger javaRan = new AtomicInteger();
            onThreadWithoutGil(() -> {
                imports.forEach(ManagedTensor::close);
                // A Java exception out of a queued deleter too, between two that must still run.
                PendingReleases.deferDeleter(node(javaRan::incrementAndGet), 0, false);
                PendingReleases.deferDeleter(node(() -> {
                    throw new IllegalStateException("a Java deleter that throws");
                }), 0, false);
                PendingReleases.deferDeleter(node(javaRan::incrementAndGet), 0, false);
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while ((released.get() < 3 || javaRan.get() < 2) && System.nanoTime() < deadline) {
                Thread.sleep(5); // no Python call: the flusher runs them
            }
            assertThat(released.get()).as("numpy arrays released").isEqualTo(3);
            assertThat(javaRan.get()).as("Java deleters run around the one that threw").isEqualTo(2);
            try (PyObject calls = PY.eval("len(raising_calls)"); PyObject fine = PY.eval("sum([1, 2])")) {
                assertThat(calls.asLong()).as("raising deleters called").isEqualTo(2);
                assertThat(fine.asLong()).as("Python works normally after").isEqualTo(3);
            }
        }
    }

    private static PendingReleases.Node node(Runnable action) {
        return new PendingReleases.Node() {
            @Override
            protected void release() {
                action.run();
            }
        };
    }

    private static long residentKiBWithoutGc() {
        try {
            return ProcessMemory.residentKiBNow();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
