package io.github.dlpack4j.python.protocol;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.github.dlpack4j.DlpackException;
import io.github.dlpack4j.DlpackExporter;
import io.github.dlpack4j.ExportRequest;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.internal.Trampoline;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonException;
import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.Convert;
import io.github.dlpack4j.python.interpreter.CpythonLayout;
import io.github.dlpack4j.python.interpreter.Names;
import io.github.dlpack4j.python.interpreter.PyErrors;
import io.github.dlpack4j.python.interpreter.PyObjects;
import io.github.dlpack4j.python.interpreter.Refs;
import io.github.dlpack4j.python.interpreter.Shutdown;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The Python type {@code dlpack4j.Tensor}, whose instances stand for Java {@link DlpackExporter}s:
 * made once at run time with {@code PyType_FromSpec}, its methods upcalls into Java.
 *
 * <ul>
 *   <li>{@code __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)}: a fresh
 *       managed tensor in a fresh single-use capsule per call ({@link DlpackArguments} validates
 *       the request first);</li>
 *   <li>{@code __dlpack_device__()}, and a {@code __repr__} with shape, dtype and device;</li>
 *   <li>the type attribute {@code __dlpack_c_exchange_api__} ({@link ExchangeApiProducer}).</li>
 * </ul>
 *
 * <p>No field of a Python object is read or written: an instance is found by its address in a map,
 * from which {@code tp_finalize} removes it when Python frees the object. The type has no
 * {@code tp_new}, so Python code cannot make instances; Java makes them with {@code PyType_GenericAlloc}.
 * Nothing thrown in Java crosses into C: every upcall turns it into a Python exception.
 */
public final class JavaTensorType {
    /** What an instance stands for; {@code owned} is closed when Python frees the instance. */
    static final class Instance {
        final DlpackExporter exporter;
        final AutoCloseable owned;
        /** A versioned export kept for borrowed {@code DLTensor} views, deleted with the instance (GIL-guarded). */
        MemorySegment view;
        /** The {@code __dlpack_device__} tuple, made on first use (a device never changes). */
        MemorySegment deviceTuple = MemorySegment.NULL;

        Instance(DlpackExporter exporter, AutoCloseable owned) {
            this.exporter = exporter;
            this.owned = owned;
        }
    }

    private static final ConcurrentHashMap<Long, Instance> INSTANCES = new ConcurrentHashMap<>();
    // From Python.h (3.10+); AbiMatchesTheCHeaderTest checks each against the headers with gcc.
    static final int Py_tp_doc = 56;
    static final int Py_tp_methods = 64;
    static final int Py_tp_repr = 66;
    static final int Py_tp_finalize = 80;
    static final int Py_TPFLAGS_DISALLOW_INSTANTIATION = 1 << 7;
    /** {@code struct PyMethodDef { const char* ml_name; PyCFunction ml_meth; int ml_flags; const char* ml_doc; }} */
    static final long METHOD_DEF_SIZE = 32;
    static final long ML_METH = 8;
    static final long ML_FLAGS = 16;
    static final long ML_DOC = 24;
    /** {@code struct PyType_Slot { int slot; void* pfunc; }} */
    static final long SLOT_SIZE = 16;
    static final long SLOT_PFUNC = 8;
    /** {@code struct PyType_Spec { const char* name; int basicsize; int itemsize; unsigned int flags; PyType_Slot* slots; }} */
    static final long SPEC_SIZE = 32;
    static final long SPEC_BASICSIZE = 8;
    static final long SPEC_ITEMSIZE = 12;
    static final long SPEC_FLAGS = 16;
    static final long SPEC_SLOTS = 24;
    private static MemorySegment type;

    private JavaTensorType() {}

    /** A new instance for {@code exporter}, a new reference; needs the GIL. */
    public static MemorySegment newInstance(DlpackExporter exporter, AutoCloseable owned) throws Throwable {
        MemorySegment o = PyErrors.check((MemorySegment) CApi.PyType_GenericAlloc.invokeExact(type(), 0L));
        Instance in = new Instance(exporter, owned);
        INSTANCES.put(o.address(), in);
        if (o.address() == lastAddress) {
            // The address of an instance whose tp_finalize did not run (off from the JVM's shutdown on),
            // reused by Python's allocator: the cache must not answer with that old instance.
            lastInstance = in;
        }
        if (Shutdown.isShuttingDown()) {
            Refs.incRef(o); // made after the host let go of Java (HostedJvmExit): never to be finalized
        }
        return o;
    }

    /** The instance last looked up, and its address: consumers tend to ask the same object again. */
    private static long lastAddress;
    private static Instance lastInstance;

    /** The instance at {@code o}, or null if {@code o} is not one of ours. Needs the GIL, which orders the cache. */
    static Instance instance(MemorySegment o) {
        return instance(o.address());
    }

    /** {@link #instance(MemorySegment)} by address. */
    static Instance instance(long a) {
        if (a == lastAddress) {
            return lastInstance;
        }
        Instance in = INSTANCES.get(a);
        if (in != null) {
            lastAddress = a;
            lastInstance = in;
        }
        return in;
    }

    /**
     * Keeps every live instance alive for good, so that Python never runs its finalizer (an upcall):
     * for a host that destroys the JVM before Python frees them. Needs the GIL.
     */
    public static int keepAllAlive() {
        int n = 0;
        for (Long address : INSTANCES.keySet()) {
            Refs.incRef(MemorySegment.ofAddress(address));
            n++;
        }
        return n;
    }

    /** Instances Python has not freed yet. */
    public static int liveInstances() {
        return INSTANCES.size();
    }

    /** The type object, made on first use; needs the GIL (which also orders the first use). */
    static MemorySegment type() throws Throwable {
        if (type == null) {
            type = create();
        }
        return type;
    }

    private static MemorySegment create() throws Throwable {
        if (isFreeThreaded()) {
            throw new UnsupportedOperationException("handing Java tensors to Python needs a Python with the GIL: "
                    + "this free-threaded build has none, and the exporter's caches rely on it");
        }
        Arena global = Arena.global();
        MethodHandles.Lookup lookup = MethodHandles.lookup();
        // Pointer arguments as JAVA_LONG (passed the same way on every 64-bit platform the linker
        // supports): a MemorySegment argument is an object made on every call. Each a trampoline:
        // Python may call a method of an instance after the JVM is gone (NULL without an exception
        // then, a SystemError), or free an instance made after the host let go (nothing to do then).
        MemorySegment dlpack = Trampoline.call(lookup.findStatic(JavaTensorType.class, "dlpack",
                MethodType.methodType(MemorySegment.class, long.class, long.class, long.class, long.class)),
                FunctionDescriptor.of(ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG), 0).address();
        MemorySegment device = Trampoline.call(lookup.findStatic(JavaTensorType.class, "dlpackDevice",
                MethodType.methodType(MemorySegment.class, MemorySegment.class, MemorySegment.class)),
                FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS), 0).address();
        MemorySegment repr = Trampoline.call(lookup.findStatic(JavaTensorType.class, "repr",
                MethodType.methodType(MemorySegment.class, MemorySegment.class)), FunctionDescriptor.of(ADDRESS, ADDRESS),
                0).address();
        MemorySegment finalize = Trampoline.release(lookup.findStatic(JavaTensorType.class, "finalize",
                MethodType.methodType(void.class, MemorySegment.class)), FunctionDescriptor.ofVoid(ADDRESS)).address();

        MemorySegment methods = global.allocate(3 * METHOD_DEF_SIZE, 8); // the third, zeroed, ends the table
        method(methods, 0, "__dlpack__", dlpack, CpythonLayout.METH_FASTCALL | CpythonLayout.METH_KEYWORDS,
                "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
                        + "A new DLPack capsule sharing the Java tensor's memory (a copy if copy=True).");
        method(methods, 1, "__dlpack_device__", device, CpythonLayout.METH_NOARGS,
                "__dlpack_device__($self, /)\n--\n\nThe (device_type, device_id) of the data.");
        MemorySegment slots = global.allocate(5 * SLOT_SIZE, 8); // the fifth, zeroed, ends the list
        slot(slots, 0, Py_tp_methods, methods);
        slot(slots, 1, Py_tp_repr, repr);
        slot(slots, 2, Py_tp_finalize, finalize);
        slot(slots, 3, Py_tp_doc, global.allocateFrom("A Java tensor (dlpack4j), shared through DLPack: "
                + "pass it to numpy.from_dlpack, torch.from_dlpack or jax.numpy.from_dlpack."));
        MemorySegment spec = global.allocate(SPEC_SIZE, 8);
        spec.set(ADDRESS, 0, global.allocateFrom("dlpack4j.Tensor"));
        spec.set(JAVA_INT, SPEC_BASICSIZE, 0); // inherit object's size: no fields of our own
        spec.set(JAVA_INT, SPEC_ITEMSIZE, 0);
        // No tp_new (Python cannot make instances), no subclasses, no GC (instances hold no Python objects).
        spec.set(JAVA_INT, SPEC_FLAGS, Py_TPFLAGS_DISALLOW_INSTANTIATION);
        spec.set(ADDRESS, SPEC_SLOTS, slots);
        MemorySegment t = PyErrors.check((MemorySegment) CApi.PyType_FromSpec.invokeExact(spec));
        try (Arena arena = Arena.ofConfined()) {
            PyErrors.check((int) CApi.PyObject_SetAttrString.invokeExact(t, arena.allocateFrom("__dlpack_c_exchange_api__"),
                    ExchangeApiProducer.capsule()));
        }
        return t; // one reference, kept for the life of the process
    }

    /** {@code sys._is_gil_enabled()} is False (3.13 free-threaded builds). */
    private static boolean isFreeThreaded() throws Throwable {
        MemorySegment sys = Names.importModule("sys");
        try (PyObject s = PyObjects.steal(sys)) {
            if (!s.hasAttr("_is_gil_enabled")) {
                return false;
            }
            try (PyObject enabled = s.callMethod("_is_gil_enabled")) {
                return !enabled.asBoolean();
            }
        }
    }

    private static void method(MemorySegment defs, int i, String name, MemorySegment fn, int flags, String doc) {
        MemorySegment d = defs.asSlice(i * METHOD_DEF_SIZE, METHOD_DEF_SIZE);
        d.set(ADDRESS, 0, Arena.global().allocateFrom(name));
        d.set(ADDRESS, ML_METH, fn);
        d.set(JAVA_INT, ML_FLAGS, flags);
        d.set(ADDRESS, ML_DOC, Arena.global().allocateFrom(doc));
    }

    private static void slot(MemorySegment slots, int i, int id, MemorySegment fn) {
        slots.set(JAVA_INT, i * SLOT_SIZE, id);
        slots.set(ADDRESS, i * SLOT_SIZE + SLOT_PFUNC, fn);
    }

    // ---------------------------------------------------------------- upcalls (GIL held; nothing may reach C)

    /** {@code __dlpack__}: METH_FASTCALL | METH_KEYWORDS. */
    private static MemorySegment dlpack(long self, long args, long nargs, long kwnames) {
        try {
            Instance in = instance(self);
            if (in == null) {
                throw new PythonException("RuntimeError", "this dlpack4j.Tensor has no Java tensor behind it");
            }
            ExportRequest request = DlpackArguments.parse(in.exporter, args, nargs, kwnames);
            return Capsules.wrap(export(in, request), request.versioned());
        } catch (Throwable t) {
            raise(t);
            return MemorySegment.NULL;
        }
    }

    /**
     * {@code in}'s exporter asked for {@code request}: a fresh managed struct, never NULL.
     *
     * @throws PythonException what Python sees when the exporter throws or returns nothing
     */
    static MemorySegment export(Instance in, ExportRequest request) {
        MemorySegment managed;
        try {
            managed = in.exporter.export(request);
        } catch (Throwable t) {
            if (in.exporter instanceof Tensor tensor && tensor.isClosed()) {
                // Closed by its Java owner: this object cannot export it any more (arrays made
                // before keep their memory). Only objects without a share of their own get here.
                throw new PythonException("BufferError", "the Java tensor is closed: " + tensor);
            }
            throw exporterFailure(t);
        }
        if (managed == null || managed.address() == 0) {
            throw new PythonException("RuntimeError", in.exporter.getClass().getName() + ".export returned NULL");
        }
        return managed;
    }

    /** Sets {@code t} as the Python exception, never throwing (the caller returns to C next). */
    static void raise(Throwable t) {
        try {
            PyErrors.raise(exporterFailure(t));
        } catch (Throwable ignored) {
            // PyErrors.raise sets a RuntimeError of its own when it fails; nothing may reach C.
        }
    }

    /**
     * The Python exception for an exporter that threw: its own Python exception, {@code BufferError}
     * for a {@link DlpackException} (it cannot export this), {@code RuntimeError} for anything else.
     */
    static PythonException exporterFailure(Throwable t) {
        if (t instanceof PythonException p) {
            return p;
        }
        String message;
        try {
            message = t.getMessage() == null ? t.getClass().getName() : t.getMessage();
        } catch (Throwable inGetMessage) {
            message = t.getClass().getName();
        }
        if (t instanceof DlpackException) {
            return new PythonException("BufferError", message);
        }
        if (t instanceof OutOfMemoryError) {
            return new PythonException("MemoryError", message);
        }
        return new PythonException("RuntimeError", "the Java exporter failed: " + t.getClass().getName() + ": " + message);
    }

    /** {@code __dlpack_device__}: METH_NOARGS. */
    private static MemorySegment dlpackDevice(MemorySegment self, MemorySegment unused) {
        try {
            Instance in = instance(self);
            if (in == null) {
                throw new PythonException("RuntimeError", "this dlpack4j.Tensor has no Java tensor behind it");
            }
            if (in.deviceTuple.address() == 0) {
                io.github.dlpack4j.Device d = in.exporter.device();
                MemorySegment made = Convert.tupleOf(new Object[] {d.type().code(), d.id()});
                if (in.deviceTuple.address() == 0) { // making it may run Python code, and so another thread
                    in.deviceTuple = made;
                } else {
                    Refs.decRef(made);
                }
            }
            Refs.incRef(in.deviceTuple);
            return in.deviceTuple;
        } catch (Throwable t) {
            raise(t);
            return MemorySegment.NULL;
        }
    }

    /** {@code repr()}: {@code dlpack4j.Tensor(shape=(2, 3), dtype=float32, device=cpu:0)}. */
    private static MemorySegment repr(MemorySegment self) {
        try {
            Instance in = instance(self);
            if (in == null) {
                return Convert.newString("dlpack4j.Tensor(<released>)");
            }
            long[] shape = in.exporter.shape();
            String dims = shape.length == 1 ? "(" + shape[0] + ",)"
                    : Arrays.toString(shape).replace('[', '(').replace(']', ')');
            return Convert.newString("dlpack4j.Tensor(shape=" + dims + ", dtype=" + in.exporter.dtype() + ", device="
                    + in.exporter.device() + ((in.exporter.flags() & io.github.dlpack4j.DlpackFlags.READ_ONLY) != 0
                    ? ", read_only=True" : "") + ")");
        } catch (Throwable t) {
            raise(t);
            return MemorySegment.NULL;
        }
    }

    /** {@code tp_finalize}: forgets the instance and lets go of what it held, keeping any pending exception. */
    private static void finalize(MemorySegment self) {
        try {
            if (self.address() == lastAddress) {
                lastAddress = 0;
                lastInstance = null;
            }
            Instance in = INSTANCES.remove(self.address());
            if (in == null) {
                return;
            }
            PyErrors.keepingError(() -> {
                if (in.view != null) {
                    Capsules.callDeleter(in.view, true);
                }
                if (in.deviceTuple.address() != 0) {
                    Refs.decRef(in.deviceTuple);
                }
                if (in.owned != null) {
                    in.owned.close();
                }
                return null;
            });
        } catch (Throwable ignored) {
            // Nothing may reach C; closing a Java tensor or deleting our own export does not fail.
        }
    }
}
