package io.github.dlpack4j.python.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.Device;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.DlpackException;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.python.ExchangeApi;
import io.github.dlpack4j.python.ImportPath;
import io.github.dlpack4j.python.ImportRequest;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonException;
import io.github.dlpack4j.python.interpreter.Gil;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * torch tensors that DLPack cannot describe as they are: torch's C Exchange API exports some of them
 * as plain memory (wrong values without an error), so every route refuses them the way
 * {@code torch.Tensor.__dlpack__} does, naming the fix.
 */
class TorchRefusalTest {
    static final Python PY = Python.start();

    static {
        PY.exec("""
                import warnings
                import torch
                warnings.filterwarnings("ignore", category=UserWarning)
                z = torch.tensor([1 + 2j, 3 - 4j])
                class Overriding(torch.Tensor):
                    def __dlpack__(self, *args, **kwargs):
                        raise BufferError("Overriding refuses every export")
                """);
    }

    /** Each kind of tensor torch would refuse (or read wrong), with the call that fixes it. */
    enum Refused {
        CONJUGATE("z.conj()", "conjugate bit", "resolve_conj()"),
        NEGATIVE("z.conj().imag", "negative bit", "resolve_neg()"),
        REQUIRES_GRAD("torch.zeros(3, requires_grad=True)", "requires gradient", "detach()"),
        SPARSE("torch.zeros(3).to_sparse()", "layout torch.sparse_coo", "to_dense()"),
        QUANTIZED("torch.quantize_per_tensor(torch.zeros(3), 0.1, 0, torch.quint8)", "quantized", "dequantize()"),
        BIT_DTYPE("torch.empty(2, dtype=torch.bits8)", "dtype torch.bits8", "view(torch.uint8)");

        final String expression;
        final String reason;
        final String fix;

        Refused(String expression, String reason, String fix) {
            this.expression = expression;
            this.reason = reason;
            this.fix = fix;
        }
    }

    /** The two ways an import reaches torch: its exchange-API table, or its {@code __dlpack__}. */
    enum Route {
        EXCHANGE_API(t -> ImportRequest.of(t)),
        DUNDER_DLPACK(t -> ImportRequest.of(t).toDevice(Device.CPU));

        final Function<PyObject, ImportRequest> request;

        Route(Function<PyObject, ImportRequest> request) {
            this.request = request;
        }
    }

    @ParameterizedTest
    @EnumSource(Refused.class)
    void theExchangeApiRouteRefusesWhatTorchWouldRefuseNamingTheFix(Refused refused) {
        assertRefused(refused, Route.EXCHANGE_API);
    }

    @ParameterizedTest
    @EnumSource(Refused.class)
    void theDunderDlpackRouteRefusesItNamingTheFixToo(Refused refused) {
        assertRefused(refused, Route.DUNDER_DLPACK);
    }

    private static void assertRefused(Refused refused, Route route) {
        long exportsBefore = Dlpack.liveExports();
        try (PyObject t = PY.eval(refused.expression)) {
            assertThatThrownBy(() -> route.request.apply(t).importTensor())
                    .as("%s through %s", refused, route)
                    .isInstanceOf(DlpackException.class)
                    .hasMessageContaining(refused.reason)
                    .hasMessageContaining(refused.fix);
        }
        assertThat(Dlpack.liveExports()).isEqualTo(exportsBefore);
    }

    @Test
    void torchsBitsAreReadFromItsCppObjectsNotThroughItsPythonGetters() {
        try (PyObject t = PY.eval("torch.zeros(1)")) {
            Gil.with(() -> {
                TorchChecks checks = ProducerType.of(t.address()).torch();
                assertThat(checks.readsBitsFromMemory()).as("%s", TorchBits.unavailableReason()).isTrue();
                return null;
            });
        }
    }

    /** Tensors whose bits differ from the samples TorchBits was calibrated on, compared with torch's getters. */
    @ParameterizedTest
    @ValueSource(strings = {
        "torch.zeros(2, 3, dtype=torch.complex128).conj()[:, 1]",
        "torch.zeros(4, dtype=torch.complex64).conj().imag[::2]",
        "torch.zeros(4, dtype=torch.complex64).conj().real",
        "torch.zeros(4, dtype=torch.complex64).conj().conj()",
        "torch._neg_view(torch.zeros(2, dtype=torch.complex64)).conj()",
        "torch._neg_view(torch.arange(4))",
        "torch.zeros(3, requires_grad=True)[1:]",
        "torch.zeros(3, requires_grad=True).detach()",
        "torch.zeros(3, requires_grad=True).requires_grad_(False)",
        "torch.zeros(3, dtype=torch.float16, requires_grad=True).exp()",
        "torch.zeros(3, 2).t()",
        "torch.nn.Parameter(torch.zeros(2))",
        "torch.zeros(2, dtype=torch.complex64).conj().as_subclass(Overriding)",
        "torch.zeros(3).to_sparse().requires_grad_()",
        "torch.eye(3).to_sparse_csr()",
        "torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.quint8)",
        "torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], requires_grad=True)",
        "torch.zeros(2, dtype=torch.complex64, device='meta').conj()",
    })
    void theBitsReadFromMemoryAreWhatTorchsGettersSay(String expression) {
        try (PyObject t = PY.eval(expression)) {
            Gil.with(() -> {
                TorchBits bits = TorchBits.find();
                MemorySegment o = t.address();
                assertThat(bits.requiresGrad(o)).as("requires_grad").isEqualTo(truth(t.attr("requires_grad")));
                assertThat(bits.isConj(o)).as("is_conj()").isEqualTo(truth(t.callMethod("is_conj")));
                assertThat(bits.isNeg(o)).as("is_neg()").isEqualTo(truth(t.callMethod("is_neg")));
                return null;
            });
        }
    }

    @ParameterizedTest
    @EnumSource(value = Refused.class, names = {"CONJUGATE", "NEGATIVE", "REQUIRES_GRAD"})
    void whereTheBitsCannotBeReadFromMemoryTorchsGettersRefuseTheSame(Refused refused) {
        TorchChecks getters = TorchChecks.throughGetters();
        try (PyObject t = PY.eval(refused.expression); PyObject plain = PY.eval("torch.zeros(2, dtype=torch.complex64)")) {
            Gil.with(() -> {
                assertThatThrownBy(() -> getters.refuseUnexportable(t.address(), false, null))
                        .isInstanceOf(DlpackException.class).hasMessageContaining(refused.fix);
                getters.refuseUnexportable(plain.address(), false, null);
                return null;
            });
        }
    }

    private static boolean truth(PyObject value) {
        try (value) {
            return value.asBoolean();
        }
    }

    @Test
    void aClassThatOnlyCallsItselfTorchTensorGetsNoTorchChecks() {
        PY.exec("""
                class Impostor:
                    __module__ = "torch"
                    __qualname__ = "Tensor"
                    def __dlpack__(self, *args, **kwargs):
                        raise BufferError("no")
                impostor = Impostor()
                """);
        try (PyObject t = PY.eval("impostor")) {
            Gil.with(() -> {
                assertThat(ProducerType.of(t.address()).torch()).isNull();
                return null;
            });
        }
    }

    @Test
    void theSamplesAreMadePlainWhateverTorchModeTheProgramSet() {
        PY.exec("""
                from torch.overrides import TorchFunctionMode
                class Liar(TorchFunctionMode):
                    def __torch_function__(self, func, types, args=(), kwargs=None):
                        if func is torch.Tensor.is_conj:
                            return True
                        return func(*args, **(kwargs or {}))
                liar = Liar()
                liar.__enter__()
                torch.set_default_device("meta")
                """);
        try {
            assertThat(truth(PY.eval("torch.zeros(1).is_meta and torch.zeros(1).is_conj()")))
                    .as("the modes are on").isTrue();
            assertThat(Gil.with(TorchBits::search)).as("found under the modes").isNotNull();
        } finally {
            PY.exec("torch.set_default_device(None)\nliar.__exit__(None, None, None)");
        }
    }

    @Test
    void theExchangeApisOwnImportAndBorrowedViewRefuseAConjugatedTensor() {
        try (PyObject t = PY.eval("z.conj()")) {
            ExchangeApi api = ExchangeApi.fromObject(t).orElseThrow();
            assertThatThrownBy(() -> api.importNoSync(t)).isInstanceOf(DlpackException.class)
                    .hasMessageContaining("resolve_conj()");
            assertThatThrownBy(() -> api.withDLTensorView(t, view -> view.toDoubleArray()))
                    .isInstanceOf(DlpackException.class).hasMessageContaining("resolve_conj()");
        }
    }

    @Test
    void theFixesTheMessagesNameImportTheTrueValues() {
        try (PyObject t = PY.eval("z.conj().resolve_conj()"); ManagedTensor m = ImportRequest.of(t).importTensor()) {
            assertThat(m.tensor().data().toArray(ValueLayout.JAVA_FLOAT)).as("complex64 as (re, im) pairs").containsExactly(1, -2, 3, 4);
        }
        try (PyObject t = PY.eval("z.conj().imag.resolve_neg()"); ManagedTensor m = ImportRequest.of(t).importTensor()) {
            assertThat(m.tensor().toDoubleArray()).containsExactly(-2, 4);
        }
    }

    @Test
    void aCopyOfANegativeViewIsImportedWithItsTrueValuesSinceTorchsCopyResolvesTheBit() {
        try (PyObject t = PY.eval("z.conj().imag")) {
            ImportRequest r = ImportRequest.of(t).copy(true);
            try (ManagedTensor m = r.importTensor()) {
                assertThat(r.path()).isEqualTo(ImportPath.DLPACK);
                assertThat(m.tensor().toDoubleArray()).containsExactly(-2, 4);
            }
        }
    }

    @Test
    void ordinaryTorchTensorsStillTakeTheExchangeApi() {
        try (PyObject t = PY.eval("torch.arange(3.0).detach()")) {
            ImportRequest r = ImportRequest.of(t);
            try (ManagedTensor m = r.importTensor()) {
                assertThat(r.path()).isEqualTo(ImportPath.EXCHANGE_API);
                assertThat(m.tensor().toDoubleArray()).containsExactly(0, 1, 2);
            }
        }
    }

    @Test
    void aSubclassThatOverridesDunderDlpackIsAskedThroughItNotBehindItsBack() {
        try (PyObject t = PY.eval("torch.zeros(2).as_subclass(Overriding)")) {
            assertThat(ExchangeApi.fromObject(t)).isEmpty();
            assertThatThrownBy(() -> ImportRequest.of(t).importTensor()).isInstanceOf(PythonException.class)
                    .hasMessageContaining("Overriding refuses every export");
        }
    }

    @Test
    void aRefusalFromTorchWithNoKnownFixIsPassedOnAsTorchsOwnBufferError() {
        try (PyObject t = PY.eval("torch.zeros(3, device='meta')")) {
            assertThatThrownBy(() -> ImportRequest.of(t).importTensor()).isInstanceOfSatisfying(PythonException.class,
                    e -> assertThat(e.pythonType()).isEqualTo("BufferError"));
        }
    }
}
