package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.ManagedTensor;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ImportSoakTest {
    static final Python PY = Python.start();

    @Test
    void aMillionImportsFromFourThreadsHalfInScopesKeepRssFlatAndReleaseEveryProducerReference() throws Exception {
        PY.exec("import numpy as np, torch, sys\nsoak_a = np.arange(8.0)\nsoak_t = torch.arange(8.0)");
        try (PyObject a = PY.getGlobal("soak_a"); PyObject t = PY.getGlobal("soak_t")) {
            long refsA = refcount("soak_a");
            long refsT = refcount("soak_t");
            run(a, t, 1_000_000); // warm-up: JIT, caches, the Java heap and the malloc arenas of 4 threads
            long rssBefore = ProcessMemory.residentKiB();
            run(a, t, 1_000_000);
            long rssAfter = ProcessMemory.residentKiB();
            System.out.printf("import soak: %d KiB more resident over 1,000,000 imports%n",
                    rssAfter - rssBefore);
            // Each import holds a reference to its producer object until its deleter runs.
            assertThat(refcount("soak_a")).as("numpy array references after every deleter ran").isEqualTo(refsA);
            assertThat(refcount("soak_t")).as("torch tensor references after every deleter ran").isEqualTo(refsT);
            // Bound: 32 MiB more resident memory over a million imports (the heap is fixed and pre-touched)
            // (one leaked managed tensor of ~100 bytes per import would be 95 MiB).
            assertThat(rssAfter - rssBefore).as("RSS gained, KiB").isLessThan(32 * 1024);
        }
    }

    private static void run(PyObject a, PyObject t, int total) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<Double>> futures = new ArrayList<>();
            for (int w = 0; w < 4; w++) {
                boolean torchFirst = w % 2 == 0;
                boolean scoped = w < 2; // two workers import in GIL scopes of 1,000, two one call at a time
                futures.add(pool.submit(() -> {
                    double sum = 0;
                    for (int start = 0; start < total / 4; start += 1000) {
                        int from = start;
                        java.util.function.Supplier<Double> batch = () -> {
                            double s = 0;
                            for (int i = from; i < Math.min(from + 1000, total / 4); i++) {
                                PyObject source = (i % 2 == 0) == torchFirst ? t : a;
                                try (ManagedTensor m = PythonDlpack.fromDlpack(source)) {
                                    s += m.tensor().getDouble(7);
                                }
                            }
                            return s;
                        };
                        sum += scoped ? PY.withGil(batch) : batch.get();
                    }
                    return sum;
                }));
            }
            for (Future<Double> f : futures) {
                assertThat(f.get(10, TimeUnit.MINUTES)).isEqualTo(7.0 * (total / 4));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private static long refcount(String name) {
        try (PyObject n = PY.eval("sys.getrefcount(" + name + ")")) {
            return n.asLong();
        }
    }
}
