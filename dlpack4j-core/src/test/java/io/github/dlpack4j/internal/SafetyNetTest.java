package io.github.dlpack4j.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * The safety net under every owning handle: each action runs exactly once, whether by
 * {@code clean()} on any thread or after its referent became unreachable, whatever thread
 * registered it and whether that thread still lives.
 */
class SafetyNetTest {
    /** A registration whose referent this test still holds, and the count its action raises. */
    private record Registered(Object referent, Cleaner.Cleanable cleanable) {}

    private static Registered register(AtomicIntegerArray runs, int i) {
        Object referent = new Object();
        return new Registered(referent, SafetyNet.register(referent, () -> runs.incrementAndGet(i)));
    }

    /** Collects until {@code done} (at most two seconds): the daemon releases what became unreachable. */
    private static void awaitCollected(BooleanSupplier done) throws InterruptedException {
        for (int i = 0; i < 200 && !done.getAsBoolean(); i++) {
            System.gc();
            Thread.sleep(10);
        }
    }

    private static int total(AtomicIntegerArray runs) {
        int n = 0;
        for (int i = 0; i < runs.length(); i++) {
            n += runs.get(i);
        }
        return n;
    }

    private static void assertEachRanOnce(AtomicIntegerArray runs) {
        for (int i = 0; i < runs.length(); i++) {
            assertThat(runs.get(i)).as("runs of action %d", i).isOne();
        }
    }

    @Test
    void cleanRunsTheActionOnceAndNeverAgainAfterTheReferentIsCollected() throws InterruptedException {
        AtomicIntegerArray runs = new AtomicIntegerArray(1);
        Cleaner.Cleanable c = register(runs, 0).cleanable();
        c.clean();
        c.clean();
        assertThat(runs.get(0)).isOne();
        awaitCollected(() -> false); // two seconds of collections: nothing may run it again
        assertThat(runs.get(0)).isOne();
    }

    @Test
    void anUnreachableReferentHasItsActionRunOnceByTheDaemon() throws InterruptedException {
        AtomicIntegerArray runs = new AtomicIntegerArray(1_000);
        for (int i = 0; i < runs.length(); i++) {
            register(runs, i); // dropped
        }
        awaitCollected(() -> total(runs) == runs.length());
        assertEachRanOnce(runs);
    }

    @Test
    void aReachableReferentKeepsItsActionFromRunning() throws InterruptedException {
        AtomicIntegerArray runs = new AtomicIntegerArray(1);
        Registered kept = register(runs, 0);
        awaitCollected(() -> runs.get(0) != 0);
        assertThat(runs.get(0)).isZero();
        kept.cleanable().clean();
        assertThat(runs.get(0)).isOne();
    }

    @Test
    void registrationsCleanedOnOtherThreadsRunOnceAndTheirSlotsAreReused() throws Exception {
        int n = 20 * SafetyNet.CHUNK;
        AtomicIntegerArray runs = new AtomicIntegerArray(n);
        int capacityBefore = SafetyNet.capacityOfThisThread();
        ExecutorService other = Executors.newFixedThreadPool(2);
        try {
            for (int round = 0; round < 5; round++) {
                List<Registered> batch = new ArrayList<>();
                for (int i = 0; i < n / 5; i++) {
                    batch.add(register(runs, round * (n / 5) + i));
                }
                // Half cleaned here, half on the pool's threads.
                List<CompletableFuture<Void>> done = new ArrayList<>();
                for (int i = 0; i < batch.size(); i++) {
                    Cleaner.Cleanable c = batch.get(i).cleanable();
                    if (i % 2 == 0) {
                        c.clean();
                    } else {
                        done.add(CompletableFuture.runAsync(c::clean, other));
                    }
                }
                CompletableFuture.allOf(done.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
            }
        } finally {
            other.shutdownNow();
        }
        assertEachRanOnce(runs);
        // Five rounds of 4 chunks' worth, each emptied before the next: the table did not grow for each.
        assertThat(SafetyNet.capacityOfThisThread()).isLessThanOrEqualTo(Math.max(capacityBefore, 16 * SafetyNet.CHUNK));
    }

    @Test
    void aTableGrowsForManyLiveRegistrationsAndShrinksOnceTheyAreCleaned() {
        int n = 64 * SafetyNet.CHUNK;
        AtomicIntegerArray runs = new AtomicIntegerArray(n);
        List<Registered> live = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            live.add(register(runs, i));
        }
        assertThat(SafetyNet.capacityOfThisThread()).isGreaterThanOrEqualTo(n);
        live.forEach(r -> r.cleanable().clean());
        live.clear();
        assertEachRanOnce(runs);
        assertThat(SafetyNet.capacityOfThisThread()).isEqualTo(SafetyNet.CHUNK);
        AtomicIntegerArray after = new AtomicIntegerArray(3 * SafetyNet.CHUNK);
        for (int i = 0; i < after.length(); i++) {
            register(after, i).cleanable().clean();
        }
        assertEachRanOnce(after);
    }

    @Test
    void registrationsOfAThreadThatEndedAreStillCleanedAndItsTableIsDroppedOnceEmpty() throws Exception {
        AtomicIntegerArray runs = new AtomicIntegerArray(2_000);
        BlockingQueue<Registered> handedOver = new ArrayBlockingQueue<>(runs.length());
        Thread t = Thread.ofPlatform().start(() -> {
            for (int i = 0; i < runs.length(); i++) {
                Registered r = register(runs, i);
                if (i % 2 == 0) {
                    handedOver.add(r); // cleaned later by this test, after the thread ended
                } // odd ones: dropped, left to the daemon
            }
        });
        t.join();
        assertThat(SafetyNet.hasTable(t)).as("kept while it holds entries").isTrue();
        for (Registered r : handedOver) {
            r.cleanable().clean();
        }
        handedOver.clear();
        awaitCollected(() -> total(runs) == runs.length());
        assertEachRanOnce(runs);
        // The daemon looks at ended threads' tables about once a second.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (SafetyNet.hasTable(t) && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertThat(SafetyNet.hasTable(t)).as("dropped once empty").isFalse();
    }

    @Test
    void commonPoolWorkersWhoseThreadLocalsAreWipedWhenIdleKeepOneTableEach() throws Exception {
        // An idle common-pool worker's thread-locals are wiped: it must find its table again.
        AtomicIntegerArray runs = new AtomicIntegerArray(20 * 64);
        int before = SafetyNet.tables();
        for (int burst = 0; burst < 20; burst++) {
            int base = burst * 64;
            java.util.stream.IntStream.range(0, 64).parallel()
                    .forEach(i -> register(runs, base + i).cleanable().clean());
            Thread.sleep(50);
        }
        assertEachRanOnce(runs);
        int workers = java.util.concurrent.ForkJoinPool.getCommonPoolParallelism();
        assertThat(SafetyNet.tables()).isLessThanOrEqualTo(before + workers + 1);
    }

    @Test
    void aLongLivedRegistrationSurvivesTheEmptyChunksAboveItBeingDroppedAndIsStillReleasedOnce() throws Exception {
        AtomicIntegerArray burst = new AtomicIntegerArray(16 * SafetyNet.CHUNK - 1);
        AtomicIntegerArray kept = new AtomicIntegerArray(1);
        List<Registered> live = new ArrayList<>();
        Registered longLived = null;
        for (int i = 0; i < burst.length(); i++) {
            live.add(register(burst, i));
            if (i == 8 * SafetyNet.CHUNK - 1) {
                longLived = register(kept, 0); // in the middle of a table of 16 chunks
            }
        }
        int grown = SafetyNet.capacityOfThisThread();
        // Cleaned on another thread: their slots are not on this thread's stack, so its next
        // registration finds the stack dry and scans a table that is empty but for one entry.
        CompletableFuture.runAsync(() -> live.forEach(r -> r.cleanable().clean())).get(30, TimeUnit.SECONDS);
        live.clear();
        register(new AtomicIntegerArray(1), 0).cleanable().clean();
        assertThat(SafetyNet.capacityOfThisThread()).as("the empty chunks above the long-lived entry dropped")
                .isLessThan(grown).isGreaterThan(8 * SafetyNet.CHUNK);
        assertEachRanOnce(burst);
        assertThat(kept.get(0)).isZero();
        java.lang.ref.Reference.reachabilityFence(longLived); // reachable until here (not released early),
        longLived = null; // and then unreachable (an interpreted frame would keep it): only the safety net releases it
        awaitCollected(() -> kept.get(0) != 0);
        assertThat(kept.get(0)).isOne();
    }

    @Test
    void anActionThatThrowsOrRegistersAgainLeavesTheTableWorking() throws InterruptedException {
        AtomicIntegerArray runs = new AtomicIntegerArray(3 * SafetyNet.CHUNK);
        for (int i = 0; i < runs.length(); i++) {
            registerTroublesome(runs, i, i % 2 == 0);
        }
        awaitCollected(() -> total(runs) == runs.length()); // the odd ones: by the daemon, which drops what they throw
        assertEachRanOnce(runs);
    }

    /** A registration whose action throws (n % 3 == 0) or registers and cleans another (n % 3 == 1). */
    private static void registerTroublesome(AtomicIntegerArray runs, int n, boolean clean) {
        Cleaner.Cleanable c = SafetyNet.register(new Object(), () -> {
            runs.incrementAndGet(n);
            if (n % 3 == 0) {
                throw new IllegalStateException("an action that throws");
            }
            if (n % 3 == 1) {
                SafetyNet.register(new Object(), () -> { }).clean(); // re-entrant
            }
        });
        if (clean) {
            try {
                c.clean();
            } catch (IllegalStateException expected) {
                // clean() passes the action's exception on, as Cleaner's does
            }
        }
    }

    @Test
    void aVirtualThreadsRegistrationsAreCleanedAndCollectedToo() throws Exception {
        AtomicIntegerArray runs = new AtomicIntegerArray(200);
        int tablesBefore = SafetyNet.tables();
        Thread.ofVirtual().start(() -> {
            for (int i = 0; i < runs.length(); i++) {
                Registered r = register(runs, i);
                if (i % 2 == 0) {
                    r.cleanable().clean();
                }
            }
        }).join();
        assertThat(SafetyNet.tables()).as("no table per virtual thread").isLessThanOrEqualTo(tablesBefore);
        awaitCollected(() -> total(runs) == runs.length());
        assertEachRanOnce(runs);
    }

    @Test
    void eightThreadsRegisteringCleaningAndDroppingEachOthersRegistrationsRunEveryActionOnce() throws Exception {
        int perThread = 20_000;
        int threads = 8;
        AtomicIntegerArray runs = new AtomicIntegerArray(threads * perThread);
        BlockingQueue<Registered> exchange = new ArrayBlockingQueue<>(1024);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<CompletableFuture<Void>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int base = t * perThread;
                done.add(CompletableFuture.runAsync(() -> {
                    for (int i = 0; i < perThread; i++) {
                        Registered r = register(runs, base + i);
                        switch (i % 3) {
                            case 0 -> r.cleanable().clean();
                            case 1 -> {
                                if (!exchange.offer(r)) {
                                    r.cleanable().clean();
                                }
                            }
                            default -> { } // dropped
                        }
                        Registered other = exchange.poll();
                        if (other != null) {
                            other.cleanable().clean(); // often another thread's registration
                        }
                    }
                }, pool));
            }
            CompletableFuture.allOf(done.toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        for (Registered r; (r = exchange.poll()) != null; ) {
            r.cleanable().clean();
        }
        awaitCollected(() -> total(runs) == runs.length());
        assertEachRanOnce(runs);
    }
}
