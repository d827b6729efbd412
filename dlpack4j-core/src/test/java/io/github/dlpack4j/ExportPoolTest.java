package io.github.dlpack4j;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLTensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A tensor exported many times takes its structs from a pool: the same guarantees as one-off exports. */
@ExtendWith(NoLeaks.class)
class ExportPoolTest {
    /** Deletes an export the way a C consumer does: through the function pointer in the struct. */
    private static void deleteAsAConsumer(MemorySegment p) {
        NativeMemory.callVoidFunction(Dlpack.deleter(), p);
    }

    @Test
    void aTensorExportedAgainAndAgainReusesTheStructItsConsumerGaveBack() {
        try (Tensor x = Tensor.of(new float[] {1, 2, 3})) {
            ManagedTensor.adoptVersioned(x.export(ExportRequest.VERSIONED)).close(); // the first: no pool yet
            Set<Long> addresses = new HashSet<>();
            for (int i = 0; i < 1000; i++) {
                MemorySegment p = x.export(ExportRequest.VERSIONED);
                addresses.add(p.address());
                try (ManagedTensor m = ManagedTensor.adoptVersioned(p)) {
                    assertThat(m.tensor().toFloatArray()).containsExactly(1, 2, 3);
                    assertThat(m.tensor().shape()).containsExactly(3);
                }
            }
            assertThat(addresses).hasSize(1);
        }
    }

    @Test
    void moreExportsOutAtOnceThanThePoolHoldsAreDistinctAndStayValidAfterTheOwnerCloses() {
        int before = Dlpack.liveExports();
        Tensor x = Tensor.of(new long[] {1, 2, 3, 4, 5, 6}, 2, 3);
        Tensor t = x.transpose().share();
        List<MemorySegment> out = new ArrayList<>();
        for (int i = 0; i < 3 * ExportPool.BLOCKS; i++) {
            out.add(t.export(i % 2 == 0 ? ExportRequest.VERSIONED : ExportRequest.LEGACY));
        }
        assertThat(out.stream().map(MemorySegment::address).distinct()).hasSize(out.size());
        assertThat(Dlpack.liveExports()).isEqualTo(before + out.size());
        x.close();
        t.close();
        for (int i = 0; i < out.size(); i++) {
            try (ManagedTensor m = i % 2 == 0 ? ManagedTensor.adoptVersioned(out.get(i)) : ManagedTensor.adoptLegacy(out.get(i))) {
                assertThat(m.tensor().shape()).containsExactly(3, 2);
                assertThat(m.tensor().toLongArray()).containsExactly(1, 4, 2, 5, 3, 6);
            }
        }
        assertThat(Dlpack.liveExports()).isEqualTo(before);
    }

    @Test
    void theMemoryOfAClosedTensorIsFreedWhenTheLastPooledExportIsDeleted() {
        long bytes = Dlpack.nativeBytesInUse();
        Tensor x = Tensor.of(new double[1000]);
        MemorySegment first = x.export(ExportRequest.VERSIONED);
        MemorySegment pooled = x.export(ExportRequest.VERSIONED);
        MemorySegment pooledToo = x.export(ExportRequest.VERSIONED);
        x.close();
        deleteAsAConsumer(pooled);
        deleteAsAConsumer(first);
        assertThat(Dlpack.nativeBytesInUse()).isGreaterThanOrEqualTo(bytes + 8000);
        try (ManagedTensor m = ManagedTensor.adoptVersioned(pooledToo)) {
            assertThat(m.tensor().getDouble(999)).isZero();
        }
        assertThat(Dlpack.nativeBytesInUse()).isEqualTo(bytes);
    }

    @Test
    void aDeleterCalledTwiceOnAPooledExportReleasesTheMemoryOnce() {
        long bytes = Dlpack.nativeBytesInUse();
        Tensor x = Tensor.of(new int[] {1, 2});
        deleteAsAConsumer(x.export(ExportRequest.VERSIONED));
        MemorySegment p = x.export(ExportRequest.VERSIONED);
        deleteAsAConsumer(p);
        deleteAsAConsumer(p);
        assertThat(x.toIntArray()).containsExactly(1, 2);
        try (ManagedTensor m = ManagedTensor.adoptVersioned(x.export(ExportRequest.VERSIONED))) {
            x.close();
            assertThat(m.tensor().toIntArray()).containsExactly(1, 2);
        }
        assertThat(Dlpack.nativeBytesInUse()).isEqualTo(bytes);
    }

    @Test
    void aConsumerThatScribbledOnAPooledStructDoesNotChangeTheNextExport() {
        try (Tensor x = Tensor.of(new short[] {1, 2, 3, 4}, 2, 2)) {
            deleteAsAConsumer(x.export(ExportRequest.VERSIONED));
            MemorySegment p = x.export(ExportRequest.VERSIONED).reinterpret(DLManagedTensorVersioned.SIZE + 32);
            // A misbehaving consumer overwrites the tensor description and the shape and strides after it.
            p.asSlice(DLManagedTensorVersioned.DL_TENSOR, DLTensor.SIZE).fill((byte) 0x7f);
            p.asSlice(DLManagedTensorVersioned.SIZE, 32).fill((byte) 0x7f);
            deleteAsAConsumer(p);
            MemorySegment q = x.export(ExportRequest.VERSIONED);
            assertThat(q.address()).isEqualTo(p.address());
            try (ManagedTensor m = ManagedTensor.adoptVersioned(q)) {
                assertThat(m.tensor().shape()).containsExactly(2, 2);
                assertThat(m.tensor().toShortArray()).containsExactly((short) 1, (short) 2, (short) 3, (short) 4);
                assertThat(m.tensor().dtype()).isEqualTo(DataType.INT16);
            }
        }
    }

    @Test
    void aPooledExportKeepsTheReadOnlyFlagAndAnExtraFlagTakesNoPooledStruct() {
        try (Tensor x = Tensor.of(new int[] {5}); Tensor ro = x.readOnly().share()) {
            for (int i = 0; i < 3; i++) {
                try (ManagedTensor m = ManagedTensor.adoptVersioned(ro.export(ExportRequest.VERSIONED))) {
                    assertThat(m.flags()).isEqualTo(DlpackFlags.READ_ONLY);
                }
            }
            for (int i = 0; i < 3; i++) {
                try (ManagedTensor m = ManagedTensor.adoptVersioned(Dlpack.exportVersioned(x, DlpackFlags.IS_COPIED))) {
                    assertThat(m.flags()).isEqualTo(DlpackFlags.IS_COPIED);
                }
            }
        }
    }

    @Test
    void aTensorClosedWhileThreadsAreMakingItsPoolLosesNothingAndFreesEverything() throws Exception {
        long bytes = Dlpack.nativeBytesInUse();
        int before = Dlpack.liveExports();
        int threads = 3;
        java.util.concurrent.ExecutorService exporters = java.util.concurrent.Executors.newFixedThreadPool(threads);
        try {
            for (int round = 0; round < 2000; round++) {
                Tensor x = Tensor.of(new int[] {round, 7});
                java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(threads + 1);
                List<java.util.concurrent.Future<List<MemorySegment>>> made = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    made.add(exporters.submit(() -> {
                        start.await();
                        List<MemorySegment> mine = new ArrayList<>();
                        for (int i = 0; i < 3; i++) { // the second makes the pool, racing the close
                            try {
                                mine.add(x.export(ExportRequest.VERSIONED));
                            } catch (IllegalStateException closed) {
                                break;
                            }
                        }
                        return mine;
                    }));
                }
                start.await();
                x.close();
                List<MemorySegment> all = new ArrayList<>();
                for (java.util.concurrent.Future<List<MemorySegment>> f : made) {
                    all.addAll(f.get(30, java.util.concurrent.TimeUnit.SECONDS));
                }
                // Only now, with every thread done, is any deleted: all of these were out at once.
                assertThat(all.stream().map(MemorySegment::address).distinct()).as("one struct handed out twice")
                        .hasSize(all.size());
                for (MemorySegment p : all) {
                    try (ManagedTensor m = ManagedTensor.adoptVersioned(p)) {
                        assertThat(m.tensor().toIntArray()).containsExactly(round, 7);
                    }
                }
                assertThat(Dlpack.liveExports()).isEqualTo(before);
                assertThat(Dlpack.nativeBytesInUse()).as("round %d", round).isEqualTo(bytes);
            }
        } finally {
            exporters.shutdownNow();
        }
    }

    @Test
    void aViewExportedAgainAndAgainKeepsNoStructsSoClosingTheOwnerFreesEverythingAtOnce() {
        long bytes = Dlpack.nativeBytesInUse();
        Tensor x = Tensor.of(new double[] {1, 2, 3, 4}, 2, 2);
        Tensor view = x.transpose();
        for (int i = 0; i < 10; i++) {
            MemorySegment p = view.export(ExportRequest.VERSIONED);
            try (ManagedTensor m = ManagedTensor.adoptVersioned(p)) {
                assertThat(m.tensor().toDoubleArray()).containsExactly(1, 3, 2, 4);
            }
        }
        x.close();
        assertThat(Dlpack.nativeBytesInUse()).isEqualTo(bytes);
    }

    @Test
    void exportsOfAnOwnerThatWasNeverClosedOutliveItsCollectionAndTheMemoryGoesWithTheLast() throws InterruptedException {
        long bytes = Dlpack.nativeBytesInUse();
        List<MemorySegment> out = exportAnOwnerAndForgetIt();
        for (int i = 0; i < 20; i++) {
            System.gc();
            Thread.sleep(10);
        }
        assertThat(Dlpack.nativeBytesInUse()).isGreaterThanOrEqualTo(bytes + 8 * 4096);
        for (MemorySegment p : out) {
            try (ManagedTensor m = ManagedTensor.adoptVersioned(p)) {
                assertThat(m.tensor().getDouble(4095)).isEqualTo(7);
            }
        }
        for (int i = 0; i < 500 && Dlpack.nativeBytesInUse() != bytes; i++) {
            System.gc();
            Thread.sleep(10);
        }
        assertThat(Dlpack.nativeBytesInUse()).isEqualTo(bytes);
    }

    private static List<MemorySegment> exportAnOwnerAndForgetIt() {
        double[] values = new double[4096];
        values[4095] = 7;
        Tensor owner = Tensor.of(values).share(); // a second owning handle, as PythonDlpack.toPython keeps
        List<MemorySegment> out = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            out.add(owner.export(ExportRequest.VERSIONED));
        }
        return out;
    }
}
