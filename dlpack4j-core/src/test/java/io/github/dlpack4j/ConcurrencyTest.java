package io.github.dlpack4j;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(NoLeaks.class)
class ConcurrencyTest {
    private record Export(MemorySegment pointer, boolean versioned) {
        ManagedTensor adopt() {
            return versioned ? ManagedTensor.adoptVersioned(pointer) : ManagedTensor.adoptLegacy(pointer);
        }
    }

    @Test
    void eightThreadsExportAdoptAndCloseTheSameTensorsAtOnce() throws Exception {
        long bytesBefore = Dlpack.nativeBytesInUse();
        int threads = 8;
        int rounds = 20;
        int perRound = 2_000;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            for (int round = 0; round < rounds; round++) {
                List<Tensor> owners = List.of(Tensor.of(new double[] {1, 2, 3, 4}), Tensor.of(new int[] {5, 6}, 2, 1),
                        Tensor.zeros(DataType.FLOAT16, 8));
                // A view too: its pooled exports each hold the memory, where an owner's pool holds it once.
                List<Tensor> shared = List.of(owners.get(0), owners.get(1), owners.get(2), owners.get(1).transpose());
                // Exports handed between threads: adopted and closed by a thread other than the exporter.
                ConcurrentLinkedQueue<Export> handoff = new ConcurrentLinkedQueue<>();
                CyclicBarrier start = new CyclicBarrier(threads);
                List<Future<Long>> results = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    results.add(pool.submit(() -> {
                        start.await();
                        long sum = 0;
                        ThreadLocalRandom r = ThreadLocalRandom.current();
                        for (int i = 0; i < perRound; i++) {
                            Tensor x = shared.get(r.nextInt(shared.size()));
                            boolean versioned = r.nextBoolean();
                            try {
                                handoff.add(new Export(versioned ? Dlpack.exportVersioned(x) : Dlpack.exportLegacy(x), versioned));
                            } catch (IllegalStateException closedByAnotherThread) {
                                continue;
                            }
                            Export mine = handoff.poll();
                            if (mine != null) {
                                try (ManagedTensor m = mine.adopt()) {
                                    sum += (long) m.tensor().toDoubleArray()[0];
                                }
                            }
                            if (i == perRound / 2 && r.nextInt(threads) == 0) {
                                shared.get(r.nextInt(shared.size())).close(); // the owner closes while exports live
                            }
                        }
                        return sum;
                    }));
                }
                for (Future<Long> f : results) {
                    f.get(60, TimeUnit.SECONDS);
                }
                for (Export left; (left = handoff.poll()) != null; ) {
                    left.adopt().close();
                }
                owners.forEach(Tensor::close);
                assertThat(Dlpack.liveExports()).isZero();
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(Dlpack.nativeBytesInUse()).isEqualTo(bytesBefore);
    }
}
