package io.github.dlpack4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.dlpack4j.internal.Trampoline;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(NoLeaks.class)
class LifetimeTest {
    @Test
    void anExportOutlivesItsOwnersClose() {
        Tensor x = Tensor.of(new double[] {1, 2, 3});
        MemorySegment p = Dlpack.exportVersioned(x);
        x.close();
        assertThatThrownBy(() -> x.getDouble(0)).isInstanceOf(IllegalStateException.class);
        try (ManagedTensor m = ManagedTensor.adoptVersioned(p)) {
            assertThat(m.tensor().toDoubleArray()).containsExactly(1, 2, 3);
        }
    }

    @Test
    void memoryIsFreedOnlyWhenTheOwnerAndEveryExportAreGone() {
        long before = Dlpack.nativeBytesInUse();
        Tensor x = Tensor.zeros(DataType.FLOAT64, 1000);
        MemorySegment a = Dlpack.exportVersioned(x);
        MemorySegment b = Dlpack.exportLegacy(x);
        x.close();
        assertThat(Dlpack.nativeBytesInUse() - before).isGreaterThanOrEqualTo(8000);
        ManagedTensor.adoptVersioned(a).close();
        assertThat(Dlpack.nativeBytesInUse() - before).isGreaterThanOrEqualTo(8000);
        ManagedTensor.adoptLegacy(b).close();
        assertThat(Dlpack.nativeBytesInUse()).isEqualTo(before);
    }

    @Test
    void closingTwiceIsHarmlessAndCallsTheDeleterOnce() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(8);
            MemorySegment p = ForeignProducer.tensor(arena, true, data, DataType.FLOAT64, new long[] {1}, new long[] {1});
            ManagedTensor m = ManagedTensor.adoptVersioned(p);
            m.close();
            m.close();
            assertThat(ForeignProducer.deleterCalls(p)).isOne();
            assertThatThrownBy(m::tensor).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void useAfterCloseThrowsForEveryViewAndSegment() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocateFrom(ValueLayout.JAVA_INT, 1, 2, 3, 4);
            MemorySegment p = ForeignProducer.tensor(arena, false, data, DataType.INT32, new long[] {2, 2}, new long[] {2, 1});
            ManagedTensor m = ManagedTensor.adoptLegacy(p);
            Tensor t = m.tensor();
            Tensor view = t.transpose();
            MemorySegment seg = t.data();
            m.close();
            assertThatThrownBy(() -> t.getLong(0, 0)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(view::toLongArray).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> seg.get(ValueLayout.JAVA_INT, 0)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> Dlpack.exportVersioned(t)).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void theDeleterRunsOnWhicheverThreadCloses() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = arena.allocate(16);
            MemorySegment p = ForeignProducer.tensor(arena, true, data, DataType.INT64, new long[] {2}, new long[] {1});
            ManagedTensor m = ManagedTensor.adoptVersioned(p);
            CompletableFuture.runAsync(m::close).get();
            assertThat(ForeignProducer.deleterCalls(p)).isOne();
        }
    }

    @Test
    void aForgottenManagedTensorIsReleasedByTheCleaner() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = arena.allocate(16);
            MemorySegment p = ForeignProducer.tensor(arena, true, data, DataType.INT64, new long[] {2}, new long[] {1});
            ManagedTensor.adoptVersioned(p); // dropped without close
            for (int i = 0; i < 100 && ForeignProducer.deleterCalls(p) == 0; i++) {
                NoLeaks.settle();
            }
            assertThat(ForeignProducer.deleterCalls(p)).isOne();
        }
    }

    @Test
    void aForgottenTensorIsFreedByTheCleaner() {
        long before = Dlpack.nativeBytesInUse();
        Tensor.zeros(DataType.FLOAT32, 1 << 20);
        for (int i = 0; i < 100 && Dlpack.nativeBytesInUse() != before; i++) {
            NoLeaks.settle();
        }
        assertThat(Dlpack.nativeBytesInUse()).isEqualTo(before);
    }

    @Test
    void intoDeleterMovesTheDutyToReleaseExactlyOnce() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocateFrom(ValueLayout.JAVA_FLOAT, 1, 2);
            MemorySegment p = ForeignProducer.tensor(arena, true, data, DataType.FLOAT32, new long[] {2}, new long[] {1});
            ManagedTensor m = ManagedTensor.adoptVersioned(p);
            Tensor kept = m.tensor();
            AllocationDeleter deleter = m.intoDeleter();
            m.close();
            assertThat(ForeignProducer.deleterCalls(p)).as("closing the moved handle does nothing").isZero();
            assertThat(kept.toFloatArray()).containsExactly(1, 2);
            assertThatThrownBy(m::tensor).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(m::intoDeleter).isInstanceOf(IllegalStateException.class);
            deleter.close();
            deleter.close();
            assertThat(deleter.isClosed()).isTrue();
            assertThat(ForeignProducer.deleterCalls(p)).isOne();
            assertThatThrownBy(kept::toFloatArray).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void reExportingAnAdoptedTensorDefersTheProducersDeleter() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocateFrom(ValueLayout.JAVA_FLOAT, 1, 2);
            MemorySegment p = ForeignProducer.tensor(arena, true, data, DataType.FLOAT32, new long[] {2}, new long[] {1});
            ManagedTensor m = ManagedTensor.adoptVersioned(p);
            MemorySegment again = Dlpack.exportVersioned(m.tensor());
            m.close();
            assertThat(ForeignProducer.deleterCalls(p)).isZero();
            try (ManagedTensor second = ManagedTensor.adoptVersioned(again)) {
                assertThat(second.tensor().toFloatArray()).containsExactly(1, 2);
            }
            assertThat(ForeignProducer.deleterCalls(p)).isOne();
        }
    }

    @Test
    void lentMemoryIsReleasedOnceWhenTheTensorAndEveryExportAreGone() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocateFrom(ValueLayout.JAVA_DOUBLE, 1, 2, 3, 4, 5, 6);
            AtomicInteger releases = new AtomicInteger();
            Tensor t = Tensor.wrap(MemorySegment.ofAddress(data.address()).reinterpret(data.byteSize()), 8,
                    DataType.FLOAT64, new long[] {2, 2}, new long[] {2, 1}, releases::incrementAndGet);
            Tensor second = t.share();
            MemorySegment export = Dlpack.exportVersioned(t.transpose());
            MemorySegment seen = t.data();
            t.close();
            second.close();
            assertThat(releases).as("an export still holds the memory").hasValue(0);
            try (ManagedTensor m = ManagedTensor.adoptVersioned(export)) {
                assertThat(m.tensor().toDoubleArray()).containsExactly(2, 4, 3, 5);
                assertThat(m.tensor().dataPointer()).isEqualTo(data.address() + 8);
            }
            assertThat(releases).hasValue(1);
            assertThatThrownBy(() -> seen.get(ValueLayout.JAVA_DOUBLE, 0)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> t.getDouble(0, 0)).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void lentMemoryOfAForgottenTensorIsReleasedByTheCleaner() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = arena.allocate(64);
            AtomicInteger releases = new AtomicInteger();
            Tensor.wrap(data, 0, DataType.FLOAT32, new long[] {16}, new long[] {1}, releases::incrementAndGet);
            for (int i = 0; i < 100 && releases.get() == 0; i++) {
                NoLeaks.settle();
            }
            assertThat(releases).hasValue(1);
        }
    }

    @Test
    void wrappingLentMemoryThatFailsLeavesTheReferenceWithTheCaller() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(16);
            AtomicInteger releases = new AtomicInteger();
            assertThatThrownBy(() -> Tensor.wrap(data, 0, DataType.FLOAT64, new long[] {3}, new long[] {1},
                    releases::incrementAndGet)).isInstanceOf(IllegalArgumentException.class);
            assertThat(releases).hasValue(0);
        }
    }

    @Test
    void anExceptionFromTheReleaseReachesTheCloseThatRanIt() {
        try (Arena arena = Arena.ofConfined()) {
            Tensor t = Tensor.wrap(arena.allocate(8), 0, DataType.INT64, new long[] {1}, new long[] {1}, () -> {
                throw new IllegalStateException("the lender's allocator is closed");
            });
            assertThatThrownBy(t::close).hasMessage("the lender's allocator is closed");
            assertThatThrownBy(() -> t.getLong(0)).isInstanceOf(IllegalStateException.class);
        }
    }

    private static ManagedTensor closedInCallback;

    private static int compareAndRelease(MemorySegment a, MemorySegment b) {
        ManagedTensor m = closedInCallback;
        closedInCallback = null;
        if (m != null) {
            m.close(); // the last hold goes while qsort still holds the tensor's segment
        }
        return 0;
    }

    @Test
    void releasingWhileANativeCallHoldsTheSegmentNeitherHangsNorFreesEarly() throws Throwable {
        long before = Dlpack.nativeBytesInUse();
        Linker linker = Linker.nativeLinker();
        MethodHandle qsort = linker.downcallHandle(linker.defaultLookup().findOrThrow("qsort"),
                FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cmp = linker.upcallStub(MethodHandles.lookup().findStatic(LifetimeTest.class, "compareAndRelease",
                            MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class)),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS), arena);
            Tensor x = Tensor.of(new int[] {2, 1});
            MemorySegment data = x.data();
            closedInCallback = ManagedTensor.adoptVersioned(Dlpack.exportVersioned(x));
            x.close();
            qsort.invokeExact(data, 2L, 4L, cmp);
        }
        for (int i = 0; i < 500 && Dlpack.nativeBytesInUse() != before; i++) {
            Thread.sleep(10);
        }
        assertThat(Dlpack.nativeBytesInUse()).isEqualTo(before);
    }

    @Test
    void abandonedExportsAndEveryLaterOneKeepADeleterThatNoLongerReachesTheJvm() throws Exception {
        assumeTrue(Trampoline.outlivesTheJvm());
        assertThat(abandonInAChildJvm()).contains("abandoned 4, live after 4, deleters kept kept kept kept, "
                + "later exports' deleters kept kept, live 7");
    }

    @Test
    void withoutTrampolinesAbandonedExportsAndEveryLaterOneHaveNoDeleterAndTheRegistryForgetsThem() throws Exception {
        assertThat(abandonInAChildJvm("-Ddlpack4j.trampolines=false"))
                .contains("abandoned 4, live after 0, deleters 0 0 0 0, later exports' deleters 0 0, live 0");
    }

    /** Runs {@link AbandonProbe} (abandoning is for good) and checks what holds in every mode; returns its output. */
    private static String abandonInAChildJvm(String... jvmOptions) throws Exception {
        Path log = Files.createTempFile("dlpack4j-abandon", ".log");
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path")));
        command.addAll(List.of(jvmOptions));
        command.add(AbandonProbe.class.getName());
        Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String out = Files.readString(log);
        Files.delete(log);
        assertThat(out).as(out).contains("memory of a tensor closed with an abandoned pooled export kept: true")
                .contains("a late deleter call is ignored: true");
        assertThat(p.exitValue()).as(out).isZero();
        return out;
    }

    @Test
    void aCloseInsideWithDataReleasesTheMemoryOnThisThreadAsTheBodyReturns() {
        AtomicInteger released = new AtomicInteger();
        AtomicReference<Thread> releaser = new AtomicReference<>();
        Tensor t = Tensor.wrap(Arena.global().allocate(16), 0, DataType.FLOAT32, new long[] {4}, new long[] {1}, () -> {
            released.incrementAndGet();
            releaser.set(Thread.currentThread());
        });
        float read = t.withData(s -> {
            t.close();
            assertThat(released.get()).as("released while the body runs").isZero();
            return s.get(ValueLayout.JAVA_FLOAT, 0);
        });
        assertThat(read).isZero();
        assertThat(released.get()).as("released once withData returned").isEqualTo(1);
        assertThat(releaser.get()).isSameAs(Thread.currentThread());
    }

    @Test
    void aCloseFromAnotherThreadDuringWithDataReturnsAtOnceAndTheBodysThreadReleases() throws Exception {
        AtomicInteger released = new AtomicInteger();
        AtomicReference<Thread> releaser = new AtomicReference<>();
        Tensor t = Tensor.wrap(Arena.global().allocate(16), 0, DataType.FLOAT32, new long[] {4}, new long[] {1}, () -> {
            released.incrementAndGet();
            releaser.set(Thread.currentThread());
        });
        CountDownLatch inBody = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        Thread body = Thread.ofPlatform().start(() -> t.withData(s -> {
            inBody.countDown();
            try {
                closed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return s.get(ValueLayout.JAVA_FLOAT, 0);
        }));
        inBody.await();
        t.close(); // does not wait for the body
        assertThat(released.get()).as("released while the body runs").isZero();
        closed.countDown();
        body.join();
        assertThat(released.get()).isEqualTo(1);
        assertThat(releaser.get()).isSameAs(body);
    }
}
