package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.DlpackException;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.interpreter.PendingReleases;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * DLPack both ways with a producer and a consumer written in Python's ctypes: nothing but the standard
 * library, so that these run on every CPython dlpack4j supports ({@code scripts/test} runs the
 * {@code any-cpython} tests on each one present), where numpy and torch may have no wheels.
 */
@Tag("any-cpython")
class CtypesPeerTest extends LeakChecked {

    static {
        PY.exec(CtypesDlpack.STRUCTS + """
                import gc
                peer_deleted = []
                peer_deleter = Deleter(lambda p: peer_deleted.append(p))
                peer_keep = []
                class PeerProducer:
                    # A producer object as the protocol has it: versioned when asked for 1.x, else legacy.
                    def __dlpack_device__(self):
                        return (1, 0)
                    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
                        if max_version is not None and max_version[0] >= 1:
                            return versioned_capsule([5, 6, 7], peer_deleter, peer_keep)
                        return legacy_capsule([5, 6, 7], peer_deleter, peer_keep)
                class PeerLegacyProducer(PeerProducer):
                    # A producer from before DLPack 1.0, whose __dlpack__ knows no max_version (numpy 1.x).
                    def __dlpack__(self, stream=None):
                        return legacy_capsule([8, 9], peer_deleter, peer_keep)
                """);
    }

    private static long deleterCalls() {
        try (PyObject n = PY.eval("len(peer_deleted)")) {
            return n.asLong();
        }
    }

    /** {@code consume(x_java, ...)} of {@link CtypesDlpack#STRUCTS} on {@code t}: version, flags, dtype, shape, values. */
    private static List<?> consumed(Tensor t, String arguments) {
        try (PyObject obj = PythonDlpack.toPython(t)) {
            PY.setGlobal("x_java", obj);
        }
        try (PyObject r = PY.eval("consume(x_java" + arguments + ")")) {
            return (List<?>) r.toJava();
        }
    }

    @Test
    void aCtypesConsumerReadsAStridedJavaTensorThroughAVersionedCapsuleWritesItAndDeletesItOnce() {
        try (Tensor t = Tensor.of(new double[] {0, 1, 2, 3, 4, 5}, 2, 3)) {
            Tensor view = t.transpose();
            List<?> r = consumed(view, ", first=-1.0, max_version=(1, 3)");
            assertThat(r).isEqualTo(List.of(List.of(1L, 3L), 0L, List.of(2L, 64L, 1L), List.of(3L, 2L),
                    List.of(0.0, 3.0, 1.0, 4.0, 2.0, 5.0)));
            assertThat(t.getDouble(0, 0)).as("the consumer's write, seen by Java").isEqualTo(-1);
            assertThat(Dlpack.liveExports()).as("the consumer called the deleter").isEqualTo(exportsBefore);
        }
    }

    @Test
    void aCtypesConsumerReadsAJavaTensorThroughALegacyCapsuleAndDeletesItOnce() {
        try (Tensor t = Tensor.of(new double[] {1.5, -2, 3}, 3)) {
            List<?> r = consumed(t, "");
            assertThat(r).as("no version, no flags").isEqualTo(Arrays.asList(null, null, List.of(2L, 64L, 1L), List.of(3L),
                    List.of(1.5, -2.0, 3.0)));
            assertThat(Dlpack.liveExports()).isEqualTo(exportsBefore);
        }
    }

    @Test
    void aReadOnlyJavaTensorSaysSoInItsVersionedFlags() {
        try (Tensor t = Tensor.of(new double[] {7, 8})) {
            List<?> r = consumed(t.readOnly(), ", max_version=(1, 0)");
            assertThat(r.get(1)).as("DLPACK_FLAG_BITMASK_READ_ONLY").isEqualTo(1L);
            assertThat(r.get(4)).isEqualTo(List.of(7.0, 8.0));
        }
    }

    @Test
    void aCapsuleNoConsumerTookDeletesItsTensorWhenPythonFreesIt() {
        try (Tensor t = Tensor.of(new double[] {1, 2}); PyObject obj = PythonDlpack.toPython(t)) {
            PY.setGlobal("x_java", obj);
            PY.exec("x_cap = x_java.__dlpack__(max_version=(1, 0))");
            assertThat(Dlpack.liveExports()).isEqualTo(exportsBefore + 1);
            PY.exec("del x_cap");
            assertThat(Dlpack.liveExports()).isEqualTo(exportsBefore);
        }
    }

    @Test
    void aJavaTensorComesBackToJavaThroughOurExchangeApiSharingItsMemory() {
        try (Tensor t = Tensor.of(new double[] {1, 2, 3}); PyObject obj = PythonDlpack.toPython(t)) {
            ImportRequest r = ImportRequest.of(obj);
            try (ManagedTensor m = r.importTensor()) {
                assertThat(r.path()).isEqualTo(ImportPath.EXCHANGE_API);
                assertThat(m.tensor().toDoubleArray()).containsExactly(1, 2, 3);
                m.tensor().setDouble(20, 1);
            }
            assertThat(t.getDouble(1)).as("the same memory").isEqualTo(20);
        }
    }

    @Test
    void aCtypesVersionedCapsuleIsReadByJavaConsumedOnceAndItsDeleterRunsOnceOnClose() {
        long before = deleterCalls();
        PY.exec("x_cap = versioned_capsule([1, 2, 3, 4], peer_deleter, peer_keep)");
        try (PyObject cap = PY.getGlobal("x_cap")) {
            try (ManagedTensor m = PythonDlpack.fromDlpack(cap)) {
                assertThat(m.isVersioned()).isTrue();
                assertThat(m.tensor().toDoubleArray()).containsExactly(1, 2, 3, 4);
                assertThat(deleterCalls()).isEqualTo(before);
            }
            assertThat(deleterCalls()).isEqualTo(before + 1);
            assertThat(cap.repr()).contains("used_dltensor_versioned");
            assertThatThrownBy(() -> PythonDlpack.fromDlpack(cap)).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("consumed already");
        }
        PY.exec("del x_cap\ngc.collect()");
        assertThat(deleterCalls()).isEqualTo(before + 1);
    }

    @Test
    void aCtypesLegacyCapsuleIsReadByJavaAndItsDeleterRunsOnceOnClose() {
        long before = deleterCalls();
        try (PyObject cap = PY.eval("legacy_capsule([1, -1], peer_deleter, peer_keep)")) {
            try (ManagedTensor m = PythonDlpack.fromDlpack(cap)) {
                assertThat(m.isVersioned()).isFalse();
                assertThat(m.tensor().toDoubleArray()).containsExactly(1, -1);
            }
            assertThat(cap.repr()).contains("used_dltensor");
        }
        PY.exec("gc.collect()");
        assertThat(deleterCalls()).isEqualTo(before + 1);
    }

    @Test
    void aCtypesProducerIsAskedForAVersionedTensorAndALegacyOneIsAskedAgainWithoutKeywords() {
        long before = deleterCalls();
        try (PyObject modern = PY.eval("PeerProducer()"); PyObject legacy = PY.eval("PeerLegacyProducer()")) {
            ImportRequest r = ImportRequest.of(modern);
            try (ManagedTensor m = r.importTensor()) {
                assertThat(r.path()).isEqualTo(ImportPath.DLPACK);
                assertThat(m.isVersioned()).isTrue();
                assertThat(m.tensor().toDoubleArray()).containsExactly(5, 6, 7);
            }
            ImportRequest l = ImportRequest.of(legacy);
            try (ManagedTensor m = l.importTensor()) {
                assertThat(l.path()).isEqualTo(ImportPath.DLPACK_LEGACY_RETRY);
                assertThat(m.isVersioned()).isFalse();
                assertThat(m.tensor().toDoubleArray()).containsExactly(8, 9);
            }
        }
        assertThat(deleterCalls()).isEqualTo(before + 2);
    }

    @Test
    void anImportClosedOnAThreadWithoutTheGilRunsItsDeleterOnceWithinSeconds() throws Exception {
        long before = deleterCalls();
        ManagedTensor m;
        try (PyObject cap = PY.eval("versioned_capsule([3, 4], peer_deleter, peer_keep)")) {
            m = PythonDlpack.fromDlpack(cap);
        }
        Thread closer = Thread.ofPlatform().start(m::close);
        closer.join(10_000);
        assertThat(closer.isAlive()).isFalse();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (PendingReleases.pendingDeleters() != 0 && System.nanoTime() < deadline) {
            Thread.sleep(5); // no Python call: the flusher runs the queued deleter
        }
        assertThat(deleterCalls()).isEqualTo(before + 1);
    }
}
