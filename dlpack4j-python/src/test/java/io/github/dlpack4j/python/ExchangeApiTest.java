package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Device;
import io.github.dlpack4j.DlpackVersion;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import org.junit.jupiter.api.Test;

/** The consumer side of the DLPack C Exchange API, against torch 2.13's table. */
class ExchangeApiTest {
    static final Python PY = Python.start();

    static {
        PY.exec("import torch, numpy as np");
    }

    @Test
    void torchsTableIsFoundOncePerTypeWithMajorVersionOne() {
        try (PyObject t = PY.eval("torch.ones(2)"); PyObject u = PY.eval("torch.zeros(3)"); PyObject a = PY.eval("np.ones(2)")) {
            ExchangeApi api = ExchangeApi.fromObject(t).orElseThrow();
            assertThat(api.version().major()).isEqualTo(DlpackVersion.MAJOR);
            assertThat(ExchangeApi.fromObject(u).orElseThrow()).isSameAs(api);
            assertThat(ExchangeApi.fromObject(a)).as("numpy has no exchange API").isEmpty();
            assertThat(api.currentWorkStream(Device.CPU)).isZero();
        }
    }

    @Test
    void torchTensorsAreImportedThroughTheExchangeApiWithoutSync() {
        PY.exec("t = torch.arange(12, dtype=torch.float32).reshape(3, 4)[:, 1:3]");
        try (PyObject t = PY.getGlobal("t")) {
            ImportRequest r = ImportRequest.of(t);
            try (ManagedTensor m = r.importTensor()) {
                assertThat(r.path()).isEqualTo(ImportPath.EXCHANGE_API);
                assertThat(m.tensor().toFloatArray()).containsExactly(1, 2, 5, 6, 9, 10);
                m.tensor().setDouble(-1, 0, 0);
            }
            try (PyObject v = PY.eval("float(t[0, 0])")) {
                assertThat(v.asDouble()).isEqualTo(-1);
            }
            try (ExchangeTensor e = ExchangeApi.fromObject(t).orElseThrow().importNoSync(t)) {
                assertThat(e.producerStream()).isZero();
                assertThat(e.tensor().tensor().shape()).containsExactly(3, 2);
            }
        }
    }

    @Test
    void aCopyRequestGoesThroughDlpackInstead() {
        try (PyObject t = PY.eval("torch.ones(3)")) {
            ImportRequest r = ImportRequest.of(t).copy(true);
            try (ManagedTensor m = r.importTensor()) {
                assertThat(r.path()).isEqualTo(ImportPath.DLPACK);
                assertThat(m.tensor().toDoubleArray()).containsExactly(1, 1, 1);
            }
        }
    }

    @Test
    void theBorrowedViewIsReadableOnlyWhileTheReaderRuns() {
        try (PyObject t = PY.eval("torch.arange(4, dtype=torch.int64)")) {
            ExchangeApi api = ExchangeApi.fromObject(t).orElseThrow();
            assertThat(api.hasDLTensorView()).as("optional in the standard; torch 2.13 has it").isTrue();
            Tensor[] leaked = new Tensor[1];
            long sum = api.withDLTensorView(t, view -> {
                leaked[0] = view;
                long s = 0;
                for (long x : view.toLongArray()) {
                    s += x;
                }
                return s;
            });
            assertThat(sum).isEqualTo(6);
            org.assertj.core.api.Assertions.assertThatThrownBy(leaked[0]::toLongArray).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void theAllocatorMakesAProducerTensorAndJavaTensorsBecomeTorchTensors() {
        try (PyObject t = PY.eval("torch.ones(1)")) {
            ExchangeApi api = ExchangeApi.fromObject(t).orElseThrow();
            try (ManagedTensor m = api.allocate(DataType.FLOAT32, Device.CPU, 2, 3)) {
                assertThat(m.tensor().shape()).containsExactly(2, 3);
                assertThat(m.tensor().dtype()).isEqualTo(DataType.FLOAT32);
            }
            try (Tensor j = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2); PyObject torchTensor = api.toPyObject(j)) {
                PY.setGlobal("from_java", torchTensor);
                try (PyObject s = PY.eval("float(from_java.sum())"); PyObject ty = PY.eval("type(from_java).__name__")) {
                    assertThat(s.asDouble()).isEqualTo(10);
                    assertThat(ty.str()).isEqualTo("Tensor");
                }
                j.setDouble(100, 0, 0);
                try (PyObject first = PY.eval("float(from_java[0, 0])")) {
                    assertThat(first.asDouble()).as("torch sees Java's memory").isEqualTo(100);
                }
                PY.exec("del from_java");
            }
        }
    }

    /**
     * torch keeps a tensor's Python object alive from C++ when that object dies before the tensor
     * (here: the import holds the tensor), and its deleter then drops it, taking the GIL. Closed on
     * a Java thread without the GIL, the import must not wait for a GIL that another thread holds
     * (on a virtual thread that wait would also hold its carrier): the deleter runs later, once.
     */
    @Test
    void aTorchImportWhosePythonObjectDiedClosesWithoutWaitingForTheGilAndIsFreedOnceSoonAfter() throws Exception {
        for (boolean virtual : new boolean[] {false, true}) {
            java.util.concurrent.CountDownLatch freed = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.atomic.AtomicInteger frees = new java.util.concurrent.atomic.AtomicInteger();
            ManagedTensor m;
            try (PyObject signal = PY.function(args -> {
                frees.incrementAndGet();
                freed.countDown();
                return null;
            })) {
                PY.setGlobal("signal_freed", signal);
                PY.exec("import weakref\n_t = torch.ones(1000) * 2\nweakref.finalize(_t, signal_freed)");
                try (PyObject t = PY.getGlobal("_t")) {
                    ImportRequest r = ImportRequest.of(t);
                    m = r.importTensor();
                    assertThat(r.path()).isEqualTo(ImportPath.EXCHANGE_API);
                }
                PY.exec("del _t, signal_freed"); // the Python object dies first: torch keeps it from C++
            }
            java.util.concurrent.CountDownLatch inScope = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(1);
            boolean[] closedWhileHeld = new boolean[1];
            Thread holder = Thread.ofPlatform().start(() -> PY.withGil(() -> {
                inScope.countDown();
                try {
                    closedWhileHeld[0] = closed.await(10, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
            assertThat(inScope.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            Thread closer = (virtual ? Thread.ofVirtual() : Thread.ofPlatform()).start(() -> {
                assertThat(m.tensor().toFloatArray()[999]).isEqualTo(2f);
                m.close();
                closed.countDown();
            });
            closer.join(30_000);
            holder.join(30_000);
            assertThat(closedWhileHeld[0]).as("closed on a %s thread while another held the GIL",
                    virtual ? "virtual" : "platform").isTrue();
            assertThat(freed.await(5, java.util.concurrent.TimeUnit.SECONDS)).as("torch's tensor freed").isTrue();
            Thread.sleep(50);
            assertThat(frees.get()).isEqualTo(1);
        }
    }
}
