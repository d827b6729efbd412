package io.github.dlpack4j.python.protocol;

import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.Names;
import io.github.dlpack4j.python.interpreter.NativeLibrary;
import io.github.dlpack4j.python.interpreter.PyErrors;
import io.github.dlpack4j.python.interpreter.PyObjects;
import io.github.dlpack4j.python.interpreter.RawMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToLongFunction;

/**
 * A torch tensor's requires-gradient, conjugate and negative bits, read where torch's C++ keeps them
 * instead of through its Python getters ({@code t.requires_grad}, {@code t.is_conj()},
 * {@code t.is_neg()} cost 100-250 ns each, which {@link TorchChecks} would pay on every import).
 *
 * <p>What is read, and why it is exactly what the getters answer:
 * <ul>
 *   <li>A {@code torch.Tensor} object holds its {@code at::Tensor} (one pointer to the
 *       {@code c10::TensorImpl}) at a fixed offset after the object header ({@code THPVariable::cdata};
 *       16 in torch 2.13), the value {@code t._cdata} reports.
 *   <li>{@code is_conj()} and {@code is_neg()} are, in C++, a test of one bit of the
 *       {@code TensorImpl}'s dispatch key set ({@code key_set_}), the value
 *       {@code torch._C._dispatch_keys(t).raw_repr()} reports; the bits are those of
 *       {@code DispatchKeySet(DispatchKey.Conjugate)} and {@code DispatchKey.Negative}.
 *   <li>{@code requires_grad} is {@code c10::TensorImpl::requires_grad() const}, an exported function
 *       of torch's {@code libc10.so} that reads the autograd metadata and can neither fail nor call
 *       Python.
 * </ul>
 * The two offsets are not assumed: they are found once per process ({@link #find}) by comparing the
 * memory of a dozen sample tensors (plain, strided views, conjugated, negated, requiring gradient,
 * results of autograd, a {@code Parameter}, a subclass, bool, complex, an inference tensor) with what
 * {@code _cdata} and {@code _dispatch_keys} report, and every sample's three bits must come out as
 * its getters say. Any mismatch, a missing symbol or a torch without these functions leaves the
 * checks on the Python getters (slower, still right): nothing is guessed. The samples are made with
 * torch function and dispatch modes off, gradients on, on the CPU, whatever the program set.
 *
 * <p>A subclass whose Python code overrides one of these getters (a {@code requires_grad} property,
 * a {@code __torch_function__} answering {@code is_conj()}) is read as its C++ object is: that is
 * the memory the exchange API exports.
 *
 * <p>Every method needs the GIL, and a live tensor of the torch build the offsets were found on.
 */
final class TorchBits {
    private static final Linker LINKER = Linker.nativeLinker();
    /** How far into a {@code TensorImpl} the key set is looked for (torch 2.13: at 168 of 184 bytes). */
    private static final int KEY_SET_SEARCH_END = 256;
    /** Where, in a {@code torch.Tensor} object, the {@code at::Tensor} is looked for: after the 16-byte header. */
    private static final int TENSOR_SEARCH_START = 16;
    private static final int TENSOR_SEARCH_END = 40;
    private static final String REQUIRES_GRAD = "_ZNK3c1010TensorImpl13requires_gradEv";

    /**
     * The samples, in a private namespace: {@code rows} of (tensor, {@code _cdata}, raw key set,
     * requires_grad, is_conj, is_neg), the two key bits, and torch's library folder. Tensors made after
     * the samples keep each sample's memory followed by more of the heap, so reading a little past a
     * {@code TensorImpl} while looking for its key set stays in mapped memory.
     */
    private static final String SAMPLES = """
            import contextlib
            import os
            import torch
            import torch.utils._python_dispatch
            def _s64(v):
                v &= (1 << 64) - 1
                return v - (1 << 64) if v >= 1 << 63 else v
            def _rows():
                z = torch.tensor([1 + 2j, 3 - 4j])
                Sub = type("Sub", (torch.Tensor,), {})
                ts = [torch.zeros(3), torch.arange(12).reshape(3, 4)[1:, ::2], torch.zeros(2, dtype=torch.bool), z,
                      z.conj(), z.conj().imag, torch._neg_view(torch.ones(2)), z.conj()[1:],
                      torch.zeros(3, requires_grad=True), torch.ones(3, requires_grad=True) * 2,
                      torch.nn.Parameter(torch.zeros(2), requires_grad=False), torch.zeros(2).as_subclass(Sub),
                      torch.zeros(2, dtype=torch.float64).requires_grad_()]
                with torch.inference_mode():
                    ts.append(torch.zeros(3))
                return [(t, _s64(t._cdata), _s64(torch._C._dispatch_keys(t).raw_repr()), t.requires_grad, t.is_conj(),
                         t.is_neg()) for t in ts]
            with contextlib.ExitStack() as _modes:  # whatever modes the program set, the samples are plain
                for _m in (torch._C.DisableTorchFunction(), torch.utils._python_dispatch._disable_current_modes(),
                           torch.inference_mode(False), torch.enable_grad(), torch.device("cpu")):
                    _modes.enter_context(_m)
                rows = _rows()
                later = [torch.zeros(1) for _ in range(64)]
            neg = _s64(torch._C.DispatchKeySet(torch._C.DispatchKey.Negative).raw_repr())
            conj = _s64(torch._C.DispatchKeySet(torch._C.DispatchKey.Conjugate).raw_repr())
            lib = os.path.join(os.path.dirname(torch.__file__), "lib")
            """;

    /** Why the bits are read through the getters in this process, or null if they are read from memory. */
    private static volatile String unavailable = "torch was not seen yet";
    private static volatile TorchBits found;
    private static volatile boolean searched;
    private static final ThreadLocal<Boolean> SEARCHING = new ThreadLocal<>();

    private final long tensorOffset;
    private final long keySetOffset;
    private final long conjugateBit;
    private final long negativeBit;
    private final MethodHandle requiresGrad;

    private TorchBits(long tensorOffset, long keySetOffset, long conjugateBit, long negativeBit, MethodHandle requiresGrad) {
        this.tensorOffset = tensorOffset;
        this.keySetOffset = keySetOffset;
        this.conjugateBit = conjugateBit;
        this.negativeBit = negativeBit;
        this.requiresGrad = requiresGrad;
    }

    /**
     * The bits' places in this process's torch, found on the first call (torch must be imported, the
     * GIL held); null if they could not be found and checked ({@link #unavailableReason()} says why).
     */
    static TorchBits find() {
        if (searched) {
            return found;
        }
        // No lock: the samples' torch calls may let the GIL go, and a thread that then took the GIL
        // and waited here for a lock would never get it back. Two threads may both search; both find
        // the same. The samples' own code may import a tensor (a torch mode the program set, say):
        // that import uses the getters.
        if (SEARCHING.get() != null) {
            return null;
        }
        SEARCHING.set(Boolean.TRUE);
        try {
            found = search();
            unavailable = null;
        } catch (Throwable e) {
            PyErrors.clearError();
            if (found == null) {
                unavailable = e.getMessage() == null ? e.toString() : e.getMessage();
            }
        } finally {
            SEARCHING.remove();
        }
        searched = true;
        return found;
    }

    /** Why the bits are read through torch's Python getters, or null if {@link #find} found them. */
    static String unavailableReason() {
        return unavailable;
    }

    /** The {@code TensorImpl*} of {@code tensor}, a live {@code torch.Tensor}. */
    private long impl(MemorySegment tensor) {
        return RawMemory.word(tensor.address() + tensorOffset);
    }

    /** {@code tensor.requires_grad}, read from its autograd metadata. */
    boolean requiresGrad(MemorySegment tensor) throws Throwable {
        return (boolean) requiresGrad.invokeExact(impl(tensor));
    }

    /** {@code tensor.is_conj()}. */
    boolean isConj(MemorySegment tensor) {
        return (keySet(tensor) & conjugateBit) != 0;
    }

    /** {@code tensor.is_neg()}. */
    boolean isNeg(MemorySegment tensor) {
        return (keySet(tensor) & negativeBit) != 0;
    }

    private long keySet(MemorySegment tensor) {
        return RawMemory.word(impl(tensor) + keySetOffset);
    }

    /** Finds the bits' places anew (not cached); {@link #find} caches its answer. */
    static TorchBits search() throws Throwable {
        try (PyObject globals = PyObjects.stealChecked((MemorySegment) CApi.PyDict_New.invokeExact());
             PyObject builtins = PyObjects.stealChecked(Names.importModule("builtins"))) {
            try (Arena arena = Arena.ofConfined()) {
                PyErrors.check((int) CApi.PyDict_SetItemString.invokeExact(PyObjects.borrow(globals), arena.allocateFrom("__builtins__"),
                        PyObjects.borrow(builtins)));
                PyObjects.stealChecked((MemorySegment) CApi.PyRun_String.invokeExact(arena.allocateFrom(SAMPLES),
                        CApi.Py_file_input, PyObjects.borrow(globals), PyObjects.borrow(globals))).close();
            }
            List<Sample> samples = new ArrayList<>();
            try (PyObject rows = globals.get("rows")) {
                long n = (long) CApi.PySequence_Size.invokeExact(PyObjects.borrow(rows));
                for (long i = 0; i < n; i++) {
                    try (PyObject row = rows.get(i); PyObject t = row.get(0); PyObject cdata = row.get(1);
                         PyObject keys = row.get(2); PyObject rg = row.get(3); PyObject conj = row.get(4);
                         PyObject neg = row.get(5)) {
                        samples.add(new Sample(PyObjects.borrow(t).address(), cdata.asLong(), keys.asLong(), rg.asBoolean(),
                                conj.asBoolean(), neg.asBoolean()));
                    }
                }
            }
            long negativeBit;
            long conjugateBit;
            String lib;
            try (PyObject neg = globals.get("neg"); PyObject conj = globals.get("conj"); PyObject l = globals.get("lib")) {
                negativeBit = neg.asLong();
                conjugateBit = conj.asLong();
                lib = l.str();
            }
            // globals (and with it the samples) stay alive until here: every address read is of a live object.
            return calibrate(samples, negativeBit, conjugateBit, Path.of(lib, "libc10.so"));
        }
    }

    private record Sample(long object, long impl, long keySet, boolean requiresGrad, boolean conj, boolean neg) {}

    private static TorchBits calibrate(List<Sample> samples, long negativeBit, long conjugateBit, Path libc10)
            throws Throwable {
        if (Long.bitCount(negativeBit) != 1 || Long.bitCount(conjugateBit) != 1) {
            throw new IllegalStateException("torch's Negative/Conjugate dispatch keys are not single bits");
        }
        long tensorOffset = firstOffset(TENSOR_SEARCH_START, TENSOR_SEARCH_END, samples, Sample::object, Sample::impl,
                "the at::Tensor in a torch.Tensor");
        long keySetOffset = firstOffset(8, KEY_SET_SEARCH_END, samples, Sample::impl, Sample::keySet,
                "the key set in a TensorImpl");
        MemorySegment symbol = NativeLibrary.loaded(libc10).flatMap(l -> l.find(REQUIRES_GRAD)).orElseThrow(
                () -> new IllegalStateException("no c10::TensorImpl::requires_grad in " + libc10 + " (loaded)"));
        // `this` is the first integer argument in the C++ ABI, so the pointer goes as a long (no segment
        // per call); critical, since the function only reads two fields and returns.
        MethodHandle requiresGrad = LINKER.downcallHandle(symbol, FunctionDescriptor.of(JAVA_BOOLEAN, JAVA_LONG),
                Linker.Option.critical(false));
        TorchBits bits = new TorchBits(tensorOffset, keySetOffset, conjugateBit, negativeBit, requiresGrad);
        for (Sample s : samples) {
            MemorySegment t = MemorySegment.ofAddress(s.object);
            if (bits.requiresGrad(t) != s.requiresGrad || bits.isConj(t) != s.conj || bits.isNeg(t) != s.neg) {
                throw new IllegalStateException("a sample's bits read from memory differ from its getters: " + s);
            }
        }
        return bits;
    }

    /**
     * The first word-aligned offset in [{@code from}, {@code to}) at which the word after {@code base}
     * equals {@code expected} for every sample. The first, not the only one: the scan stops there, so
     * it reads no further into the object than the field itself (a {@code TensorImpl} is a 184-byte
     * allocation in torch 2.13, its key set at 168); {@link #calibrate} then checks every sample's bits.
     */
    private static long firstOffset(int from, int to, List<Sample> samples, ToLongFunction<Sample> base,
                                    ToLongFunction<Sample> expected, String what) {
        for (int offset = from; offset < to; offset += 8) {
            boolean all = true;
            for (Sample s : samples) {
                if (RawMemory.word(base.applyAsLong(s) + offset) != expected.applyAsLong(s)) {
                    all = false;
                    break;
                }
            }
            if (all) {
                return offset;
            }
        }
        throw new IllegalStateException("no place matches " + what);
    }
}
