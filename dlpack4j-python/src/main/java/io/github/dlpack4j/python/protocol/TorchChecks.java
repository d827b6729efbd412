package io.github.dlpack4j.python.protocol;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.DataTypeCode;
import io.github.dlpack4j.DlpackException;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonException;
import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.CpythonLayout;
import io.github.dlpack4j.python.interpreter.Names;
import io.github.dlpack4j.python.interpreter.PyErrors;
import io.github.dlpack4j.python.interpreter.PyObjects;
import io.github.dlpack4j.python.interpreter.Refs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * What {@code torch.Tensor.__dlpack__} checks before it exports, for the routes that do not go
 * through it, and the negative bit that it forgets.
 *
 * <p>torch's C Exchange API ({@code managed_tensor_from_py_object_no_sync}, torch 2.13) exports the
 * raw storage of any strided tensor with flags 0: a conjugated view reads as its unconjugated values,
 * a tensor that requires gradient becomes writable memory behind autograd's back. Its Python
 * {@code __dlpack__} refuses both with {@code BufferError}; and both routes export a view with the
 * negative bit set (e.g. {@code x.conj().imag}) as its unnegated values, which torch's own
 * {@code from_dlpack} then reads wrong. So when a torch tensor is imported without a copy, these
 * bits are read, from torch's C++ objects ({@link TorchBits}) or else through its getters; layouts and dtypes that
 * DLPack cannot describe make the producer fail, and {@link #explain} turns that failure into the
 * reason and the fix.
 *
 * <p>Every method needs the GIL.
 */
final class TorchChecks {
    private static final MemorySegment TRUE = CpythonLayout.TRUE;
    private static final MemorySegment FALSE = CpythonLayout.FALSE;
    /** Per thread: the one-element argument array of {@code t.is_conj()} and {@code t.is_neg()}. */
    private static final ThreadLocal<MemorySegment> SELF = ThreadLocal.withInitial(
            () -> Arena.ofAuto().allocate(ValueLayout.ADDRESS));

    private final MemorySegment requiresGrad;
    private final MemorySegment isConj;
    private final MemorySegment isNeg;
    /** For tests: never read the bits from memory. */
    private final boolean gettersOnly;

    private TorchChecks(boolean gettersOnly) {
        requiresGrad = intern("requires_grad");
        isConj = intern("is_conj");
        isNeg = intern("is_neg");
        this.gettersOnly = gettersOnly;
    }

    /** Checks that read every bit through torch's getters, as where {@link TorchBits} finds nothing: for tests. */
    static TorchChecks throughGetters() {
        return new TorchChecks(true);
    }

    /**
     * The checks for {@code type}, or null if it is no subclass of {@code torch.Tensor}. Once per type.
     *
     * @param type a Python type, with the GIL held
     */
    static TorchChecks forType(PyObject type) throws Throwable {
        return ProducerType.firstInMro(type, cls -> isTorchTensor(cls) ? new TorchChecks(false) : null);
    }

    /** Whether {@code cls} is torch's own {@code torch.Tensor} (the object, not a class of that name). */
    private static boolean isTorchTensor(PyObject cls) {
        if (!cls.hasAttr("__module__") || !cls.hasAttr("__qualname__")) {
            return false;
        }
        try (PyObject module = cls.attr("__module__"); PyObject name = cls.attr("__qualname__")) {
            if (!"torch".equals(module.str()) || !"Tensor".equals(name.str())) {
                return false;
            }
        }
        try (PyObject sys = PyObjects.steal(Names.importModule("sys")); PyObject modules = sys.attr("modules")) {
            try (PyObject imported = modules.callMethod("__contains__", "torch")) {
                if (!imported.asBoolean()) {
                    return false;
                }
            }
            try (PyObject torch = modules.get("torch"); PyObject tensor = torch.attr("Tensor")) {
                return PyObjects.borrow(tensor).address() == PyObjects.borrow(cls).address();
            }
        }
    }

    /**
     * Refuses {@code tensor} if importing its memory as it is would break what torch's
     * {@code __dlpack__} promises: requires gradient, conjugate bit, or (unless {@code copying}) the
     * negative bit. torch's copy resolves the negative bit, so a copy of such a view is right. The
     * bits are read from torch's C++ objects where {@link TorchBits} found them (a few ns); else each
     * costs a call of a getter (100-250 ns), so with the {@code dtype} already exported only the bits
     * that dtype can carry are read: only floating and complex tensors require gradient, only complex
     * ones have the conjugate bit.
     *
     * @param tensor  a borrowed {@code torch.Tensor}
     * @param copying whether the producer is asked to copy ({@code copy=True})
     * @param dtype   the tensor's dtype if known (read from its export), or null
     * @throws DlpackException naming the reason and the call that fixes it
     */
    void refuseUnexportable(MemorySegment tensor, boolean copying, DataType dtype) throws Throwable {
        DataTypeCode code = dtype == null ? null : dtype.code();
        boolean integral = code == DataTypeCode.INT || code == DataTypeCode.UINT || code == DataTypeCode.BOOL;
        if (!integral && requiresGrad(tensor)) {
            throw new DlpackException("cannot import a torch.Tensor that requires gradient: Java would read and "
                    + "write its memory behind autograd's back (torch's __dlpack__ refuses it too); pass tensor.detach()");
        }
        if ((code == null || code == DataTypeCode.COMPLEX) && isConj(tensor)) {
            throw new DlpackException("cannot import a torch.Tensor with the conjugate bit set (a lazy conj() view): "
                    + "its memory holds the unconjugated values, which every DLPack reader would see; pass "
                    + "tensor.resolve_conj()");
        }
        if (!copying && isNeg(tensor)) {
            throw new DlpackException("cannot import a torch.Tensor with the negative bit set (a lazy negation such "
                    + "as x.conj().imag): its memory holds the values unnegated, which every DLPack reader would see; "
                    + "pass tensor.resolve_neg(), or ask for a copy");
        }
    }

    /** Whether the bits are read from torch's C++ objects ({@link TorchBits}) rather than through its getters. */
    boolean readsBitsFromMemory() {
        return bits() != null;
    }

    /** Where the bits are read from memory, or null (the getters). Found on the first call: a volatile read after. */
    private TorchBits bits() {
        return gettersOnly ? null : TorchBits.find();
    }

    private boolean requiresGrad(MemorySegment tensor) throws Throwable {
        TorchBits bits = bits();
        return bits != null ? bits.requiresGrad(tensor)
                : isTrue((MemorySegment) CApi.PyObject_GetAttr.invokeExact(tensor, requiresGrad));
    }

    private boolean isConj(MemorySegment tensor) throws Throwable {
        TorchBits bits = bits();
        return bits != null ? bits.isConj(tensor) : callsTrue(tensor, isConj);
    }

    private boolean isNeg(MemorySegment tensor) throws Throwable {
        TorchBits bits = bits();
        return bits != null ? bits.isNeg(tensor) : callsTrue(tensor, isNeg);
    }

    /**
     * The reason and the fix for a torch tensor whose export failed ({@code producerError}) because
     * DLPack cannot describe it: a layout other than strided, a bit dtype or a quantized dtype; null for any other
     * failure, which the caller passes on as it is. Never throws.
     *
     * @param tensor        the torch tensor that could not be exported
     * @param producerError torch's error, kept as the cause
     */
    static DlpackException explain(PyObject tensor, PythonException producerError) {
        String fix;
        try {
            fix = fixFor(tensor);
        } catch (RuntimeException e) {
            PyErrors.clearError();
            return null;
        }
        return fix == null ? null : new DlpackException(fix + " (torch: " + producerError.pythonType() + ": "
                + producerError.pythonMessage() + ")", producerError);
    }

    private static String fixFor(PyObject tensor) {
        try (PyObject layout = tensor.attr("layout")) {
            String l = layout.str();
            if (!l.equals("torch.strided")) {
                return "cannot import a torch.Tensor with layout " + l + ": DLPack describes strided tensors only; "
                        + "pass tensor.to_dense()";
            }
        }
        try (PyObject dtype = tensor.attr("dtype")) {
            String d = dtype.str();
            if (d.startsWith("torch.bits")) {
                return "cannot import a torch.Tensor of dtype " + d + ": DLPack has no code for torch's bit types; pass "
                        + "tensor.view(torch.uint8), or the integer dtype of the same width";
            }
        }
        try (PyObject quantized = tensor.attr("is_quantized")) {
            if (Boolean.TRUE.equals(quantized.toJava())) {
                try (PyObject dtype = tensor.attr("dtype")) {
                    return "cannot import a quantized torch.Tensor (" + dtype.str() + "): DLPack has no quantized "
                            + "dtypes; pass tensor.dequantize()";
                }
            }
        }
        return null;
    }

    /** {@code t.name()} is true; the result's reference is dropped. */
    private static boolean callsTrue(MemorySegment tensor, MemorySegment name) throws Throwable {
        MemorySegment self = SELF.get();
        self.set(ValueLayout.ADDRESS, 0, tensor);
        return isTrue((MemorySegment) CApi.PyObject_VectorcallMethod.invokeExact(name, self, 1L, MemorySegment.NULL));
    }

    /**
     * Whether {@code result} (a new reference, or NULL with an error set) is true. {@code True} and
     * {@code False} are static objects that are never freed, so their references are not dropped one
     * by one (a downcall saved per check; on CPython 3.12 and later they are immortal anyway).
     */
    private static boolean isTrue(MemorySegment result) throws Throwable {
        if (result.address() == TRUE.address()) {
            return true;
        }
        if (result.address() == FALSE.address()) {
            return false;
        }
        PyErrors.check(result);
        try {
            return PyErrors.check((int) CApi.PyObject_IsTrue.invokeExact(result)) == 1;
        } finally {
            Refs.decRef(result);
        }
    }

    private static MemorySegment intern(String name) {
        try {
            return PyErrors.check((MemorySegment) CApi.PyUnicode_InternFromString.invokeExact(Arena.global().allocateFrom(name)));
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }
}
