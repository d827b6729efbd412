package io.github.dlpack4j.testing;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * The three promises of raw access ({@link Tensor#data()} and {@link Tensor#withData}) to memory
 * that someone else frees, checked against a real producer: a segment used after the release throws
 * on every thread; a reader racing the release never sees freed memory (run under glibc's
 * {@code MALLOC_PERTURB_}, which fills freed blocks, so that such a read shows as a wrong value); a
 * native call that holds the segment keeps the memory until it returns. Each producer's module runs
 * these with its own {@link Source} (numpy and torch in dlpack4j-python, Arrow in dlpack4j-arrow, a
 * {@link ManagedTensor} adopted directly in core).
 */
public final class RawAccessContract {
    /** Elements of every source's tensor: float32 {@code 1, 2, ..., N}. */
    public static final int N = 256;

    /** A tensor over memory that closing {@code owner} releases, its last holder; the owner closes the tensor too. */
    public record Imported(Tensor tensor, AutoCloseable owner) {}

    /** Makes fresh imports of one producer's memory, each float32 {@code [N]} holding {@code 1, ..., N}. */
    @FunctionalInterface
    public interface Source {
        /** {@return a fresh import whose memory nothing else holds} */
        Imported open() throws Exception;
    }

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle QSORT = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("qsort"),
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
    /** What the comparator does on its first call: release the tensor from another thread and wait for that. */
    private static volatile Runnable onFirstCompare;
    private static final AtomicLong WRONG_IN_NATIVE_CALL = new AtomicLong();

    private RawAccessContract() {}

    /** Fails unless freed memory is filled by glibc in this JVM (the surefire configuration sets it). */
    public static void requireMallocPerturb() {
        assertThat(System.getenv("MALLOC_PERTURB_"))
                .as("MALLOC_PERTURB_ must be set for this JVM (the module's surefire configuration sets it), "
                        + "or a read of freed memory may go unseen")
                .isNotBlank();
    }

    /**
     * A segment from {@code data()}, and one leaked out of {@code withData}, used after the release:
     * {@link IllegalStateException} on the releasing thread; on another thread the same for
     * {@code data()}'s, and {@link WrongThreadException} for the confined one, which no other thread
     * ever reads.
     */
    public static void aSegmentUsedAfterTheReleaseThrowsOnEveryThread(Source source) throws Exception {
        Imported shared = source.open();
        MemorySegment seg = shared.tensor().data();
        assertThat(seg.get(JAVA_FLOAT, 4L * (N - 1))).isEqualTo(N);
        shared.owner().close();
        assertThatThrownBy(() -> seg.get(JAVA_FLOAT, 0)).isInstanceOf(IllegalStateException.class);
        assertThat(onAnotherThread(() -> seg.get(JAVA_FLOAT, 0))).isInstanceOf(IllegalStateException.class);

        Imported confined = source.open();
        MemorySegment leaked = confined.tensor().withData(s -> {
            assertThat(s.get(JAVA_FLOAT, 4L * (N - 1))).isEqualTo(N);
            return s;
        });
        assertThatThrownBy(() -> leaked.get(JAVA_FLOAT, 0)).isInstanceOf(IllegalStateException.class);
        confined.owner().close();
        assertThatThrownBy(() -> leaked.get(JAVA_FLOAT, 0)).isInstanceOf(IllegalStateException.class);
        assertThat(onAnotherThread(() -> leaked.get(JAVA_FLOAT, 0))).isInstanceOf(WrongThreadException.class);
        assertThatThrownBy(() -> confined.tensor().withData(s -> s)).isInstanceOf(IllegalStateException.class);
    }

    /**
     * {@code rounds} imports, each read without pause by another thread, through {@code data()}'s
     * segment (even rounds) or {@code withData} (odd ones), while this thread releases it: every
     * value read is right, or the read throws {@link IllegalStateException}.
     */
    public static void aReaderRacingTheReleaseNeverSeesFreedMemory(Source source, int rounds) throws Exception {
        requireMallocPerturb();
        AtomicReference<Object> current = new AtomicReference<>(); // a segment, or a tensor
        AtomicLong reads = new AtomicLong();
        AtomicLong wrong = new AtomicLong();
        AtomicLong refused = new AtomicLong();
        AtomicReference<Throwable> unexpected = new AtomicReference<>();
        Function<MemorySegment, Long> check = s -> {
            long bad = 0;
            for (int i = 0; i < N; i++) {
                if (s.get(JAVA_FLOAT_UNALIGNED, 4L * i) != i + 1) {
                    bad++;
                }
            }
            return bad;
        };
        AtomicBoolean stop = new AtomicBoolean();
        // Not the interrupt status: the JDK sets it on a thread that a shared arena's close finds
        // inside an access (it delivers the failure as an asynchronous exception).
        Thread reader = Thread.ofPlatform().name("raw-access-reader").start(() -> {
            while (!stop.get()) {
                Object target = current.get();
                if (target == null) {
                    Thread.yield();
                    continue;
                }
                try {
                    long bad = target instanceof MemorySegment s ? check.apply(s) : ((Tensor) target).withData(check);
                    wrong.addAndGet(bad);
                    reads.incrementAndGet();
                } catch (IllegalStateException gone) {
                    refused.incrementAndGet();
                    current.compareAndSet(target, null);
                } catch (Throwable t) {
                    unexpected.compareAndSet(null, t);
                    return;
                }
            }
        });
        try {
            for (int round = 0; round < rounds && unexpected.get() == null; round++) {
                Imported imp = source.open();
                long before = reads.get() + refused.get();
                current.set(round % 2 == 0 ? imp.tensor().data() : imp.tensor());
                long until = System.nanoTime() + 100_000_000L;
                while (reads.get() + refused.get() == before && System.nanoTime() - until < 0) {
                    Thread.yield(); // the reader is at work on this round before the release
                }
                imp.owner().close();
            }
        } finally {
            stop.set(true);
            reader.join();
        }
        assertThat(unexpected.get()).as("the reader failed").isNull();
        assertThat(wrong.get()).as("values read wrong (freed memory) in %d reads", reads.get()).isZero();
        assertThat(reads.get()).as("reads").isGreaterThanOrEqualTo(rounds / 2);
    }

    /**
     * A native call ({@code qsort}) holds the segment of {@code data()}, or of {@code withData}, while
     * another thread releases the tensor: the release returns at once, and the call still reads the
     * right values; the memory goes once the call is over.
     */
    public static void aNativeCallKeepsTheMemoryUntilItReturns(Source source) throws Throwable {
        for (boolean confined : new boolean[] {false, true}) {
            Imported imp = source.open();
            CountDownLatch released = new CountDownLatch(1);
            onFirstCompare = () -> {
                onFirstCompare = null;
                CompletableFuture.runAsync(() -> {
                    try {
                        imp.owner().close();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                    released.countDown();
                });
                try {
                    assertThat(released.await(30, TimeUnit.SECONDS)).as("the release returned").isTrue();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
            WRONG_IN_NATIVE_CALL.set(0);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment cmp = LINKER.upcallStub(MethodHandles.lookup().findStatic(RawAccessContract.class,
                                "compareAfterRelease", MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class)),
                        FunctionDescriptor.of(JAVA_INT, ADDRESS.withTargetLayout(JAVA_FLOAT), ADDRESS.withTargetLayout(JAVA_FLOAT)),
                        arena);
                if (confined) {
                    imp.tensor().withData(s -> {
                        sort(s, cmp);
                        return null;
                    });
                } else {
                    sort(imp.tensor().data(), cmp);
                }
            }
            assertThat(released.getCount()).isZero();
            assertThat(WRONG_IN_NATIVE_CALL.get()).as("values the native call read after the release (confined: %s)", confined)
                    .isZero();
            // The release that data()'s arena held up finishes on another thread, within microseconds of the
            // call's return: let it, so that the next test's count of native memory starts from a settled state.
            Thread.sleep(50);
        }
    }

    private static void sort(MemorySegment s, MemorySegment cmp) {
        try {
            QSORT.invokeExact(s, (long) N, 4L, cmp);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** Descending, so that qsort reads every element; the first call releases the tensor first. */
    @SuppressWarnings("unused") // the upcall
    private static int compareAfterRelease(MemorySegment a, MemorySegment b) {
        Runnable first = onFirstCompare;
        if (first != null) {
            first.run();
        }
        float x = a.get(JAVA_FLOAT, 0);
        float y = b.get(JAVA_FLOAT, 0);
        if (x < 1 || x > N || x != Math.rint(x) || y < 1 || y > N || y != Math.rint(y)) {
            WRONG_IN_NATIVE_CALL.incrementAndGet();
        }
        return Float.compare(y, x);
    }

    private static Throwable onAnotherThread(Runnable r) throws InterruptedException {
        try {
            CompletableFuture.runAsync(r, Thread.ofPlatform()::start).get();
            return null;
        } catch (ExecutionException e) {
            return e.getCause();
        }
    }
}
