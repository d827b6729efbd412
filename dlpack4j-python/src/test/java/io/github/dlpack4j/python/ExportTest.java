package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Device;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.DlpackException;
import io.github.dlpack4j.DlpackExporter;
import io.github.dlpack4j.ExportRequest;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.interpreter.Gil;
import io.github.dlpack4j.python.interpreter.PyErrors;
import io.github.dlpack4j.python.protocol.ExchangeApiProducer;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Java to Python against the real consumers in .venv: numpy 2.4.6, torch 2.13, jax 0.10.2. */
class ExportTest extends LeakChecked {

    static {
        PY.exec("""
                import numpy as np, torch, gc, jax, jax.numpy as jnp, jax.dlpack
                def consumer_error(o):
                    try:
                        np.from_dlpack(o)
                    except Exception as e:
                        return (type(e).__name__, str(e))
                """);
    }

    private static DataType dtype(String name) {
        try {
            return (DataType) DataType.class.getField(name.toUpperCase()).get(null);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }

    /** A 2x3 Java tensor of {@code dtype} holding small values every type can represent. */
    private static Tensor sample(DataType dtype) {
        Tensor t = Tensor.zeros(dtype, 2, 3);
        double[] values = {0, 1, 2, 0.5, 4, 1.5};
        for (int i = 0; i < 6; i++) {
            double v = dtype.toString().contains("int") || dtype.equals(DataType.BOOL) ? Math.floor(values[i]) % 2 : values[i];
            t.setDouble(v, i / 3, i % 3);
        }
        return t;
    }

    private static double[] doubles(String expr) {
        try (PyObject list = PY.eval(expr)) {
            return ((List<?>) list.toJava()).stream().mapToDouble(x -> ((Number) x).doubleValue()).toArray();
        }
    }

    private static void consume(Tensor t, String consumer, String dtype) {
        try (PyObject obj = PythonDlpack.toPython(t)) {
            PY.setGlobal("x_java", obj);
        }
        PY.exec("x_out = " + consumer + "(x_java)");
        String values = consumer.startsWith("torch")
                ? "[float(v) for v in (x_out.real if x_out.is_complex() else x_out).double().flatten().tolist()]"
                : "[float(v) for v in np.real(np.asarray(x_out)).astype(np.float64).ravel()]";
        assertThat(doubles(values)).as(consumer + " " + dtype).containsExactly(t.toDoubleArray());
        try (PyObject shape = PY.eval("list(x_out.shape)")) {
            assertThat(shape.toJava()).isEqualTo(List.of(2L, 3L));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
            "float32", "float64", "complex64", "complex128"})
    void numpyConsumesEveryDtypeItAcceptsWithJavasValues(String name) {
        try (Tensor t = sample(dtype(name))) {
            consume(t, "np.from_dlpack", name);
            try (PyObject d = PY.eval("str(x_out.dtype)")) {
                assertThat(d.str()).isEqualTo(name);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"})
    void numpyRefusesTypesItCannotHoldWithItsOwnErrorAndNothingLeaks(String name) {
        try (Tensor t = Tensor.zeros(dtype(name), 4); PyObject obj = PythonDlpack.toPython(t)) {
            PY.setGlobal("x_java", obj);
            try (PyObject r = PY.eval("consumer_error(x_java)")) {
                // numpy's own refusal, the same it gives torch's bfloat16 tensors; the export is deleted
                assertThat(r.toJava()).as(name).isEqualTo(List.of("RuntimeError", "Unsupported dtype in DLTensor."));
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
            "bfloat16", "float32", "float64", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
            "float8_e5m2fnuz"})
    void torchConsumesEveryDtypeItAcceptsWithJavasValues(String name) {
        try (Tensor t = sample(dtype(name))) {
            consume(t, "torch.from_dlpack", name);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16", "bfloat16", "float32",
            "complex64"})
    void jaxConsumesEveryDtypeItAcceptsWithJavasValues(String name) {
        try (Tensor t = sample(dtype(name))) {
            consume(t, "jnp.from_dlpack", name);
        }
    }

    @Test
    void writesAreVisibleBothWays() {
        try (Tensor t = Tensor.of(new double[] {1, 2, 3, 4}, 2, 2); PyObject obj = PythonDlpack.toPython(t)) {
            PY.setGlobal("x_java", obj);
            PY.exec("x_np = np.from_dlpack(x_java)\nx_np[1, 0] = 30\nx_t = torch.from_dlpack(x_java)");
            assertThat(t.getDouble(1, 0)).isEqualTo(30);
            t.setDouble(-7, 0, 1);
            assertThat(doubles("x_np.ravel().tolist()")).containsExactly(1, -7, 30, 4);
            assertThat(doubles("x_t.flatten().tolist()")).containsExactly(1, -7, 30, 4);
        }
    }

    @Test
    void viewsWithStridesOffsetsAndNegativeStepsArriveAsTheyAre() {
        try (Tensor t = Tensor.of(new double[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 3, 4)) {
            Tensor reversed = t.transpose().slice(0, 3, 0, -2); // rows 3 and 1 of the transpose
            try (PyObject obj = PythonDlpack.toPython(reversed)) {
                PY.setGlobal("x_java", obj);
                assertThat(doubles("np.from_dlpack(x_java).ravel().tolist()")).containsExactly(reversed.toDoubleArray());
            }
            // torch 2.13 aborts the process on negative strides from any producer (numpy's a[::-1] too):
            // it gets the positive-stride views only.
            Tensor strided = t.transpose().slice(0, 1, 4, 2).slice(1, 1, 3, 1); // columns 1 and 3, rows 1-2
            try (PyObject obj = PythonDlpack.toPython(strided)) {
                PY.setGlobal("x_java", obj);
                assertThat(doubles("np.from_dlpack(x_java).ravel().tolist()")).containsExactly(strided.toDoubleArray());
                assertThat(doubles("torch.from_dlpack(x_java).flatten().tolist()")).containsExactly(strided.toDoubleArray());
            }
            // jax takes compact data in any dimension order only.
            try (PyObject obj = PythonDlpack.toPython(t.transpose())) {
                PY.setGlobal("x_java", obj);
                assertThat(doubles("np.asarray(jnp.from_dlpack(x_java)).ravel().tolist()"))
                        .containsExactly(t.transpose().toDoubleArray());
            }
        }
    }

    @Test
    void eachDlpackCallMakesAFreshCapsuleAndTheObjectStaysUsable() {
        try (Tensor t = Tensor.of(new float[] {1, 2, 3}); PyObject obj = PythonDlpack.toPython(t)) {
            PY.setGlobal("x_java", obj);
            PY.exec("x_a = x_java.__dlpack__(max_version=(1, 3))\nx_b = x_java.__dlpack__()");
            try (PyObject names = PY.eval("[repr(x_a).split()[2], repr(x_b).split()[2], x_a is x_b]")) {
                assertThat(names.toJava()).isEqualTo(List.of("\"dltensor_versioned\"", "\"dltensor\"", false));
            }
            assertThat(Dlpack.liveExports() - exportsBefore).isEqualTo(2);
            PY.exec("del x_a, x_b");
            assertThat(Dlpack.liveExports()).as("unconsumed capsules delete their tensors").isEqualTo(exportsBefore);
            try (PyObject r = PY.eval("(repr(x_java), x_java.__dlpack_device__(), float(np.from_dlpack(x_java).sum()))")) {
                assertThat(r.toJava()).isEqualTo(List.of("dlpack4j.Tensor(shape=(3,), dtype=float32, device=cpu:0)",
                        List.of(1L, 0L), 6.0));
            }
        }
    }

    @Test
    void aBadRequestWhilePythonHandlesAnExceptionAndCollectsGarbageRaisesInsteadOfCrashing() {
        // On CPython 3.9-3.11 raising the TypeError allocates while an exception is being handled, which
        // can start a collection whose capsule destructors call into Java: that must not happen inside a
        // call the JVM made without a thread-state transition (it aborts the JVM).
        try (Tensor t = Tensor.of(new float[] {1, 2, 3}); PyObject obj = PythonDlpack.toPython(t)) {
            PY.setGlobal("x_java", obj);
            PY.exec("""
                    import gc
                    class x_Cycle: pass
                    gc.disable()
                    for _ in range(50):
                        x_c = x_Cycle(); x_c.self = x_c; x_c.capsule = x_java.__dlpack__(max_version=(1, 0))
                    del x_c
                    x_threshold = gc.get_threshold()
                    x_bad = [1, 0]  # made now: nothing may be allocated before the call
                    x_errors = []
                    def x_ask(bad):
                        try:
                            x_java.__dlpack__(max_version=bad)
                        except TypeError as e:
                            x_errors.append(type(e).__name__)
                    try:
                        raise ValueError("being handled")
                    except ValueError:
                        gc.set_threshold(1)
                        gc.enable()
                        x_ask(x_bad)
                        for bad in (1.0, "1.0", (1,)):
                            x_ask(bad)
                    gc.set_threshold(*x_threshold)
                    gc.collect()
                    """);
            try (PyObject errors = PY.eval("x_errors")) {
                assertThat(errors.toJava()).isEqualTo(List.of("TypeError", "TypeError", "TypeError", "TypeError"));
            }
            assertThat(Dlpack.liveExports()).as("the collected capsules deleted their exports").isEqualTo(exportsBefore);
        }
    }

    @Test
    void aReadOnlyTensorArrivesReadOnlyAndIsRefusedToLegacyConsumers() {
        try (Tensor t = Tensor.of(new double[] {1, 2}); PyObject obj = PythonDlpack.toPython(t.readOnly())) {
            PY.setGlobal("x_java", obj);
            try (PyObject r = PY.eval("(np.from_dlpack(x_java).flags.writeable, repr(x_java))")) {
                assertThat(r.toJava()).isEqualTo(List.of(false, "dlpack4j.Tensor(shape=(2,), dtype=float64, device=cpu:0, read_only=True)"));
            }
            assertThatThrownBy(() -> PY.exec("x_java.__dlpack__()")).isInstanceOf(PythonException.class)
                    .satisfies(e -> assertThat(((PythonException) e).pythonType()).isEqualTo("BufferError"));
            PY.exec("x_c = np.from_dlpack(x_java, copy=True)\nx_c[0] = 9");
            assertThat(t.getDouble(0)).isEqualTo(1);
        }
    }

    @Test
    void aCopyRequestGivesTheConsumerItsOwnCopy() {
        try (Tensor t = Tensor.of(new long[] {1, 2, 3}); PyObject obj = PythonDlpack.toPython(t)) {
            PY.setGlobal("x_java", obj);
            PY.exec("x_c = np.from_dlpack(x_java, copy=True)\nx_c[:] = 0\nx_t = torch.from_dlpack(x_java, copy=True)\nx_t[0] = 5");
            assertThat(t.toLongArray()).containsExactly(1, 2, 3);
        }
    }

    @Test
    void everyRequestRaisesWhatNumpyRaisesForTheSameRequest() throws Exception {
        PY.exec(new String(ExportTest.class.getResourceAsStream("/dlpack_requests.py").readAllBytes(),
                java.nio.charset.StandardCharsets.UTF_8));
        try (Tensor t = Tensor.of(new double[] {1, 2, 3}); PyObject w = PythonDlpack.toPython(t);
             PyObject r = PythonDlpack.toPython(t.readOnly())) {
            PY.setGlobal("x_java", w);
            PY.setGlobal("x_java_ro", r);
            PY.exec("x_nd = np.arange(3.0)\nx_nd_ro = np.arange(3.0)\nx_nd_ro.flags.writeable = False");
            try (PyObject count = PY.eval("len(REQUESTS)"); PyObject writable = PY.eval("compare(x_nd, x_java)");
                 PyObject readOnly = PY.eval("compare(x_nd_ro, x_java_ro)")) {
                assertThat(count.asLong()).isGreaterThan(60);
                assertThat((List<?>) writable.toJava()).as("requests whose outcome differs from numpy's").isEmpty();
                assertThat((List<?>) readOnly.toJava()).as("read-only requests whose outcome differs").isEmpty();
            }
        }
        PY.exec("gc.collect()");
    }

    @Test
    void aLegacyNumpyConsumesJavaExportsThroughTheLegacyAbi() throws Exception {
        String out = LegacyNumpyProbe.output();
        assertThat(out).contains("numpy 1.26.4").contains("consumed [-1.0, 2.5, 3.5]")
                .contains("read-only refused with BufferError").endsWith("exit 0");
    }

    /** An exporter that says its data is on a device and records the stream it is asked for. */
    private static final class OnDevice implements FourFloats {
        final io.github.dlpack4j.DeviceType type;
        final Tensor host = Tensor.of(new float[] {1, 2, 3, 4});
        volatile Long lastStream;

        OnDevice(io.github.dlpack4j.DeviceType type) {
            this.type = type;
        }

        @Override public Device device() {
            return new Device(type, 0);
        }

        @Override public MemorySegment export(ExportRequest request) {
            lastStream = request.stream();
            return Dlpack.exportVersioned(host); // stands in for device memory: only the request is under test
        }
    }

    @Test
    void deviceStreamsArePassedOnExceptTheValuesDlpackReservesPerDevice() {
        OnDevice cuda = new OnDevice(io.github.dlpack4j.DeviceType.CUDA);
        OnDevice rocm = new OnDevice(io.github.dlpack4j.DeviceType.ROCM);
        try (PyObject c = PythonDlpack.toPython(cuda); PyObject r = PythonDlpack.toPython(rocm)) {
            PY.setGlobal("x_cuda", c);
            PY.setGlobal("x_rocm", r);
            PY.exec("""
                    def x_outcome(o, s):
                        try:
                            o.__dlpack__(stream=s, max_version=(1, 3))
                            return 'ok'
                        except Exception as e:
                            return type(e).__name__""");
            try (PyObject out = PY.eval("[x_outcome(x_cuda, s) for s in (None, -1, 0, 1, 2, 12345)] + "
                    + "[x_outcome(x_rocm, s) for s in (None, -1, 0, 1, 2, 12345)] + [x_outcome(x_cuda, 'x')]")) {
                assertThat(out.toJava()).isEqualTo(List.of("ok", "ok", "ValueError", "ok", "ok", "ok",
                        "ok", "ok", "ok", "ValueError", "ValueError", "ok", "TypeError"));
            }
            PY.exec("x_cuda.__dlpack__(stream=7, max_version=(1, 3))");
            assertThat(cuda.lastStream).isEqualTo(7L);
        } finally {
            cuda.host.close();
            rocm.host.close();
        }
    }

    @Test
    void pythonCannotMakeInstancesOfTheType() {
        try (Tensor t = Tensor.of(new int[] {1}); PyObject obj = PythonDlpack.toPython(t)) {
            PY.setGlobal("x_java", obj);
            assertThatThrownBy(() -> PY.exec("type(x_java)()")).isInstanceOf(PythonException.class)
                    .satisfies(e -> assertThat(((PythonException) e).pythonType()).isEqualTo("TypeError"));
        }
    }

    @Test
    void javaClosingFirstLeavesEveryConsumerWorkingUntilTheLastOneDies() {
        long[] values = new long[1000];
        for (int i = 0; i < values.length; i++) {
            values[i] = i;
        }
        Tensor t = Tensor.of(values);
        try (PyObject obj = PythonDlpack.toPython(t)) {
            PY.setGlobal("x_java", obj);
        }
        PY.exec("""
                x_consumers = []
                for i in range(1000):
                    x_consumers.append((np.from_dlpack, torch.from_dlpack, jnp.from_dlpack)[i % 3](x_java))""");
        t.close();
        assertThatThrownBy(() -> t.getLong(0)).isInstanceOf(IllegalStateException.class);
        assertThat(Dlpack.liveExports() - exportsBefore).isGreaterThanOrEqualTo(667); // numpy's and torch's; jax may copy
        try (PyObject sums = PY.eval("sorted({int(np.asarray(c).sum()) for c in x_consumers})")) {
            assertThat(sums.toJava()).isEqualTo(List.of(499500L));
        }
        PY.exec("del x_java\ngc.collect()");
        assertThat(Dlpack.nativeBytesInUse() - bytesBefore).as("consumers still hold the memory").isGreaterThanOrEqualTo(8000);
        PY.exec("x_last = x_consumers[0]\ndel x_consumers\ngc.collect()");
        assertThat(Dlpack.nativeBytesInUse() - bytesBefore).isGreaterThanOrEqualTo(8000);
        assertThat(doubles("[float(x_last[999])]")).containsExactly(999);
    }

    @Test
    void fourJavaThreadsHandTheSameTensorToNumpyAndTorchWhileJavaClosesIt() throws Exception {
        Tensor t = Tensor.of(new double[] {2, 4, 6});
        try (PyObject obj = PythonDlpack.toPython(t)) {
            PY.setGlobal("x_java", obj);
        }
        PY.exec("""
                def x_consume(n, torch_first):
                    total = 0.0
                    for i in range(n):
                        consume = torch.from_dlpack if (i % 2 == 0) == torch_first else np.from_dlpack
                        total += float(consume(x_java)[2])
                    return total""");
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(4);
        try {
            List<java.util.concurrent.Future<Double>> sums = new java.util.ArrayList<>();
            for (int w = 0; w < 4; w++) {
                boolean torchFirst = w % 2 == 0;
                sums.add(pool.submit(() -> {
                    try (PyObject r = PY.eval("x_consume(2000, " + (torchFirst ? "True" : "False") + ")")) {
                        return r.asDouble();
                    }
                }));
            }
            t.close(); // the Python object keeps its own share
            for (java.util.concurrent.Future<Double> f : sums) {
                assertThat(f.get(2, java.util.concurrent.TimeUnit.MINUTES)).isEqualTo(12_000.0);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void anImportedNumpyArrayGoesOnToTorchAndNumpysDeleterWaitsForTheLastHolder() {
        PY.exec("import weakref\nx_src = np.arange(4.0)\nx_alive = weakref.ref(x_src)");
        try (PyObject src = PY.getGlobal("x_src"); io.github.dlpack4j.ManagedTensor m = PythonDlpack.fromDlpack(src);
             PyObject obj = PythonDlpack.toPython(m.tensor())) {
            PY.setGlobal("x_java", obj);
        }
        PY.exec("x_t = torch.from_dlpack(x_java)\ndel x_java, x_src\ngc.collect()");
        try (PyObject r = PY.eval("(x_alive() is not None, x_t.tolist())")) {
            assertThat(r.toJava()).as("Java closed its import and its object; torch still holds numpy's memory")
                    .isEqualTo(List.of(true, List.of(0.0, 1.0, 2.0, 3.0)));
        }
        PY.exec("x_t[1] = 10\nx_view = x_alive()");
        assertThat(doubles("x_view.tolist()")).containsExactly(0, 10, 2, 3);
        PY.exec("del x_t, x_view\ngc.collect()");
        try (PyObject gone = PY.eval("x_alive() is None")) {
            assertThat(gone.asBoolean()).as("numpy's array is freed once torch let go").isTrue();
        }
    }

    @Test
    void aCapsuleIsConsumedOnlyOnce() {
        try (Tensor t = Tensor.of(new int[] {1, 2}); PyObject obj = PythonDlpack.toPython(t)) {
            PY.setGlobal("x_java", obj);
            PY.exec("x_cap = x_java.__dlpack__(max_version=(1, 3))\nx_t = torch.from_dlpack(x_cap)");
            assertThatThrownBy(() -> PY.exec("torch.from_dlpack(x_cap)")).isInstanceOf(PythonException.class);
            assertThat(doubles("x_t.tolist()")).containsExactly(1, 2);
        }
    }

    /** A test exporter of four float32 on the CPU, whose export is up to the implementation. */
    private interface FourFloats extends DlpackExporter {
        @Override default Device device() {
            return Device.CPU;
        }

        @Override default DataType dtype() {
            return DataType.FLOAT32;
        }

        @Override default long[] shape() {
            return new long[] {4};
        }

        @Override default long flags() {
            return 0;
        }
    }

    /** An exporter that fails the way it is told. */
    private record Failing(RuntimeException failure) implements FourFloats {
        @Override public MemorySegment export(ExportRequest request) {
            throw failure;
        }
    }

    @Test
    void anExporterThatThrowsGivesPythonAnExceptionAndTheJvmLives() {
        try (PyObject broken = PythonDlpack.toPython(new Failing(new IllegalStateException("disk on fire")));
             PyObject refusing = PythonDlpack.toPython(new Failing(new DlpackException("not today")))) {
            PY.setGlobal("x_broken", broken);
            PY.setGlobal("x_refusing", refusing);
            try (PyObject r = PY.eval("[consumer_error(x_broken), consumer_error(x_refusing), repr(x_broken)]")) {
                assertThat(r.toJava()).isEqualTo(List.of(
                        List.of("RuntimeError", "the Java exporter failed: java.lang.IllegalStateException: disk on fire"),
                        List.of("BufferError", "not today"),
                        "dlpack4j.Tensor(shape=(4,), dtype=float32, device=cpu:0)"));
            }
        }
    }

    /** An exporter that breaks the contract by returning NULL. */
    private record ReturnsNull() implements FourFloats {
        @Override public MemorySegment export(ExportRequest request) {
            return MemorySegment.NULL;
        }
    }

    @Test
    void anExporterThatReturnsNullIsARuntimeErrorOnEveryRouteNotACrash() {
        try (PyObject obj = PythonDlpack.toPython(new ReturnsNull())) {
            PY.setGlobal("x_null", obj);
            try (PyObject r = PY.eval("consumer_error(x_null)")) {
                assertThat(((List<?>) r.toJava()).get(0)).isEqualTo("RuntimeError");
            }
            ExchangeApi api = ExchangeApi.fromObject(obj).orElseThrow();
            assertThatThrownBy(() -> api.importNoSync(obj)).isInstanceOf(PythonException.class)
                    .hasMessageContaining("returned NULL");
            assertThatThrownBy(() -> api.withDLTensorView(obj, Tensor::numel)).isInstanceOf(PythonException.class)
                    .hasMessageContaining("returned NULL");
        }
    }

    @Test
    void aReadOnlyTensorHasNoBorrowedViewWhichCouldNotSayReadOnly() {
        try (Tensor t = Tensor.of(new int[] {1}); PyObject obj = PythonDlpack.toPython(t.readOnly())) {
            ExchangeApi api = ExchangeApi.fromObject(obj).orElseThrow();
            assertThatThrownBy(() -> api.withDLTensorView(obj, Tensor::numel)).isInstanceOf(PythonException.class)
                    .satisfies(e -> assertThat(((PythonException) e).pythonType()).isEqualTo("BufferError"));
            try (ExchangeTensor e = api.importNoSync(obj)) {
                assertThat(e.tensor().tensor().isReadOnly()).isTrue();
            }
        }
    }

    @Test
    void ourExchangeTableRefusesNullPointerArgumentsInsteadOfWritingThroughThem() {
        java.lang.foreign.Linker linker = java.lang.foreign.Linker.nativeLinker();
        MemorySegment table = ExchangeApiProducer.table();
        var twoPointers = linker.downcallHandle(io.github.dlpack4j.abi.DLPackExchangeAPI.MANAGED_TENSOR_FROM_PY_OBJECT_NO_SYNC_FN);
        var allocator = linker.downcallHandle(io.github.dlpack4j.abi.DLPackExchangeAPI.MANAGED_TENSOR_ALLOCATOR_FN);
        var stream = linker.downcallHandle(io.github.dlpack4j.abi.DLPackExchangeAPI.CURRENT_WORK_STREAM_FN);
        try (Tensor t = Tensor.of(new int[] {1, 2}); PyObject obj = PythonDlpack.toPython(t)) {
            List<Integer> statuses = Gil.with(() -> {
                MemorySegment nul = MemorySegment.NULL;
                java.util.ArrayList<Integer> r = new java.util.ArrayList<>();
                for (long at : new long[] {io.github.dlpack4j.abi.DLPackExchangeAPI.MANAGED_TENSOR_FROM_PY_OBJECT_NO_SYNC,
                        io.github.dlpack4j.abi.DLPackExchangeAPI.DLTENSOR_FROM_PY_OBJECT_NO_SYNC,
                        io.github.dlpack4j.abi.DLPackExchangeAPI.MANAGED_TENSOR_TO_PY_OBJECT_NO_SYNC}) {
                    MemorySegment first = at == io.github.dlpack4j.abi.DLPackExchangeAPI.MANAGED_TENSOR_TO_PY_OBJECT_NO_SYNC
                            ? Dlpack.exportVersioned(t) : obj.address(); // to_py_object takes ownership even on failure
                    r.add((int) twoPointers.invokeExact(table.get(java.lang.foreign.ValueLayout.ADDRESS, at), first, nul));
                    PyErrors.clearError();
                }
                r.add((int) allocator.invokeExact(table.get(java.lang.foreign.ValueLayout.ADDRESS,
                        io.github.dlpack4j.abi.DLPackExchangeAPI.MANAGED_TENSOR_ALLOCATOR), nul, nul, nul, nul));
                r.add((int) stream.invokeExact(table.get(java.lang.foreign.ValueLayout.ADDRESS,
                        io.github.dlpack4j.abi.DLPackExchangeAPI.CURRENT_WORK_STREAM), 1, 0, nul));
                PyErrors.clearError();
                return r;
            });
            assertThat(statuses).containsExactly(-1, -1, -1, -1, -1);
        }
    }

    @Test
    void ourExchangeApiConsumerWorksAgainstOurProducer() {
        try (Tensor t = Tensor.of(new double[] {1, 2, 3}); PyObject obj = PythonDlpack.toPython(t)) {
            ExchangeApi api = ExchangeApi.fromObject(obj).orElseThrow();
            assertThat(api.version().toString()).isEqualTo("1.3");
            assertThat(api.currentWorkStream(Device.CPU)).isZero();
            try (ExchangeTensor e = api.importNoSync(obj)) {
                assertThat(e.producerStream()).isZero();
                assertThat(e.tensor().tensor().toDoubleArray()).containsExactly(1, 2, 3);
                e.tensor().tensor().setDouble(20, 1);
            }
            assertThat(t.getDouble(1)).isEqualTo(20);
            assertThat(api.hasDLTensorView()).isTrue();
            assertThat(api.withDLTensorView(obj, Tensor::toDoubleArray)).containsExactly(1, 20, 3);
            try (var a = api.allocate(DataType.INT16, Device.CPU, 2, 5)) {
                assertThat(a.tensor().shape()).containsExactly(2, 5);
                assertThat(a.tensor().toLongArray()).containsOnly(0);
            }
            assertThatThrownBy(() -> api.allocate(DataType.FLOAT32, new Device(io.github.dlpack4j.DeviceType.CUDA, 0), 2))
                    .isInstanceOf(DlpackException.class).hasMessageContaining("CPU only");
            try (Tensor u = Tensor.of(new int[] {7, 8}); PyObject made = api.toPyObject(u)) {
                PY.setGlobal("x_made", made);
                assertThat(doubles("np.from_dlpack(x_made).tolist()")).containsExactly(7, 8);
                assertThat(made.repr()).startsWith("dlpack4j.Tensor(shape=(2,), dtype=int32");
            }
        }
    }
}
