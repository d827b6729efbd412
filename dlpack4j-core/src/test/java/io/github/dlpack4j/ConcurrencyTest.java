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
    private record Export(MemorySegment pointer, boolean versioned, double[] expected) {
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
                // A view too: views export unpooled, owners mostly from their pools.
                List<Tensor> shared = List.of(owners.get(0), owners.get(1), owners.get(2), owners.get(1).transpose());
                // Exports handed between threads: adopted and closed by a thread other than the exporter.
                java.util.Map<Tensor, double[]> values = new java.util.IdentityHashMap<>();
                shared.forEach(x -> values.put(x, x.toDoubleArray()));
                // Every struct out is out once: a pooled block handed to two consumers at a time would show here.
                java.util.Set<Long> out = java.util.concurrent.ConcurrentHashMap.newKeySet();
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
                            MemorySegment p;
                            try {
                                p = versioned ? Dlpack.exportVersioned(x) : Dlpack.exportLegacy(x);
                            } catch (IllegalStateException closedByAnotherThread) {
                                continue;
                            }
                            assertThat(out.add(p.address())).as("a struct handed out while still out").isTrue();
                            handoff.add(new Export(p, versioned, values.get(x)));
                            Export mine = handoff.poll();
                            if (mine != null) {
                                try (ManagedTensor m = mine.adopt()) {
                                    assertThat(m.tensor().toDoubleArray()).containsExactly(mine.expected());
                                    sum += (long) m.tensor().toDoubleArray()[0];
                                    out.remove(mine.pointer().address()); // before its deleter gives it back
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
