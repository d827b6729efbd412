package io.github.dlpack4j.python.protocol;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Device;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.DlpackException;
import io.github.dlpack4j.DlpackVersion;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.abi.DLDataType;
import io.github.dlpack4j.abi.DLDevice;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLPackExchangeAPI;
import io.github.dlpack4j.abi.DLPackExchangeAPIHeader;
import io.github.dlpack4j.abi.DLPackVersion;
import io.github.dlpack4j.abi.DLTensor;
import io.github.dlpack4j.python.ExchangeTensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.Gil;
import io.github.dlpack4j.python.interpreter.PyErrors;
import io.github.dlpack4j.python.interpreter.PyObjects;
import io.github.dlpack4j.python.interpreter.Refs;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Optional;
import java.util.function.Function;

/**
 * The consumer's side of a producer's DLPack C Exchange API, behind
 * {@link io.github.dlpack4j.python.ExchangeApi} (DLPack 1.3: the type attribute
 * {@code __dlpack_c_exchange_api__}, a capsule named {@code dlpack_exchange_api}), as a consumer uses
 * it: imports without a trip through Python's {@code __dlpack__}, the producer's current work stream,
 * its allocator, a borrowed view, and handing a Java tensor to the producer's library.
 *
 * <p>Tables are found once per Python type and cached (the type is kept alive with its table, which
 * the standard makes static for the life of the process). A table whose major version is not 1 is
 * skipped for the {@code prev_api} it points to. No callback synchronises: the caller orders its
 * work after {@link #currentWorkStream}.
 */
public final class ExchangeTable {
    private static final MemorySegment CAPSULE_NAME = Arena.global().allocateFrom("dlpack_exchange_api");
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle ALLOCATOR_INVOKER = LINKER.downcallHandle(DLPackExchangeAPI.MANAGED_TENSOR_ALLOCATOR_FN);
    private static final MethodHandle TWO_POINTER_INVOKER = LINKER.downcallHandle(DLPackExchangeAPI.MANAGED_TENSOR_FROM_PY_OBJECT_NO_SYNC_FN);
    private static final MethodHandle STREAM_INVOKER = LINKER.downcallHandle(DLPackExchangeAPI.CURRENT_WORK_STREAM_FN);
    private static final MemorySegment SET_ERROR;
    private static final ThreadLocal<String[]> ALLOCATION_ERROR = ThreadLocal.withInitial(() -> new String[1]);

    static {
        try {
            SET_ERROR = LINKER.upcallStub(MethodHandles.lookup().findStatic(ExchangeTable.class, "setError",
                    MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class, MemorySegment.class)),
                    DLPackExchangeAPI.SET_ERROR_FN, Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final MemorySegment table;
    private final DlpackVersion version;
    @SuppressWarnings("unused") // keeps the producer's type (and so its static table) alive with the cache
    private final PyObject type;
    /** What the producer's {@code __dlpack__} would refuse that its table does not (torch); null if nothing. */
    private final TorchChecks torch;

    /** The public face of this table, made on first use ({@link #facade}); GIL-guarded. */
    private Object facade;

    private ExchangeTable(MemorySegment table, DlpackVersion version, PyObject type, TorchChecks torch) {
        this.table = table;
        this.version = version;
        this.type = type;
        this.torch = torch;
    }

    /**
     * {@return the exchange API of {@code obj}'s type, looked up once per type; null if it has none this consumer understands (major 1)}
     * Needs the GIL.
     *
     * @param obj a borrowed object pointer of the producer's type
     * @throws Throwable what the lookup's downcalls may throw
     */
    public static ExchangeTable forObject(MemorySegment obj) throws Throwable {
        return ProducerType.of(obj).api();
    }

    /**
     * The table of {@code type}, if it has one this consumer understands and does not override the
     * {@code __dlpack__} of the class that published the table (the table would bypass the override).
     *
     * @param torch the checks that {@code type}'s {@code __dlpack__} makes, or null
     */
    static Optional<ExchangeTable> discover(PyObject type, TorchChecks torch) throws Throwable {
        if (!type.hasAttr("__dlpack_c_exchange_api__") || overridesDlpack(type)) {
            return Optional.empty();
        }
        try (PyObject capsule = type.attr("__dlpack_c_exchange_api__")) {
            MemorySegment c = PyObjects.borrow(capsule);
            if (!Capsules.isCapsule(c) || (int) CApi.PyCapsule_IsValid.invokeExact(c, CAPSULE_NAME) != 1) {
                return Optional.empty(); // DLPack 1.2 published an int here; only 1.3 capsules are used
            }
            MemorySegment header = PyErrors.check((MemorySegment) CApi.PyCapsule_GetPointer.invokeExact(c, CAPSULE_NAME));
            for (int hops = 0; header.address() != 0 && hops < 64; hops++) {
                MemorySegment h = header.reinterpret(DLPackExchangeAPI.SIZE);
                int major = h.get(JAVA_INT, DLPackExchangeAPIHeader.VERSION + DLPackVersion.MAJOR);
                int minor = h.get(JAVA_INT, DLPackExchangeAPIHeader.VERSION + DLPackVersion.MINOR);
                if (major == DlpackVersion.MAJOR) {
                    Refs.incRef(PyObjects.borrow(type));
                    return Optional.of(new ExchangeTable(h, new DlpackVersion(major, minor), PyObjects.steal(PyObjects.borrow(type)), torch));
                }
                header = h.get(ADDRESS, DLPackExchangeAPIHeader.PREV_API);
            }
            return Optional.empty();
        }
    }

    /** Whether a class between {@code type} and the one that publishes the table defines its own {@code __dlpack__}. */
    private static boolean overridesDlpack(PyObject type) throws Throwable {
        Boolean overrides = ProducerType.firstInMro(type, cls -> {
            try (PyObject dict = cls.attr("__dict__");
                 PyObject has = dict.callMethod("__contains__", "__dlpack_c_exchange_api__")) {
                if (!Boolean.TRUE.equals(has.toJava())) {
                    return null;
                }
                if (!type.hasAttr("__dlpack__")) {
                    return false;
                }
                try (PyObject own = type.attr("__dlpack__"); PyObject published = cls.attr("__dlpack__")) {
                    return PyObjects.borrow(own).address() != PyObjects.borrow(published).address();
                }
            }
        });
        return Boolean.TRUE.equals(overrides);
    }

    /**
     * {@return the one public face of this table, made by {@code make} on first use} Needs the GIL.
     *
     * @param <T>  the face's type
     * @param make makes it from this table
     */
    @SuppressWarnings("unchecked")
    public <T> T facade(Function<ExchangeTable, T> make) {
        if (facade == null) {
            facade = make.apply(this);
        }
        return (T) facade;
    }

    /** {@return the table's version} */
    public DlpackVersion version() {
        return version;
    }

    /** {@return whether the producer offers the optional borrowed {@code DLTensor} view} */
    public boolean hasDLTensorView() {
        return table.get(ADDRESS, DLPackExchangeAPI.DLTENSOR_FROM_PY_OBJECT_NO_SYNC).address() != 0;
    }

    /**
     * The producer's current work stream on {@code device}; 0 when it has none (the CPU).
     *
     * @param device a device of the producer's
     * @return the stream handle ({@code cudaStream_t} or similar) as an address
     * @throws PythonException if the producer reports an error
     */
    public long currentWorkStream(Device device) {
        return Gil.with(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(ADDRESS);
                int status = (int) STREAM_INVOKER.invokeExact(table.get(ADDRESS, DLPackExchangeAPI.CURRENT_WORK_STREAM),
                        device.type().code(), device.id(), out);
                PyErrors.check(status);
                return out.get(ADDRESS, 0).address();
            }
        });
    }

    /** A pointer-sized out-parameter per thread, instead of an arena per call. */
    private static final ThreadLocal<MemorySegment> OUT = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(ADDRESS));

    /**
     * Imports {@code obj} (an object of the producer's type) without synchronisation: ownership of
     * a fresh {@code DLManagedTensorVersioned}, with the producer's stream at the time.
     *
     * @param obj a borrowed object of the producer's type; the GIL is held
     * @return the owned import and the stream to wait for before reading it
     * @throws PythonException if the producer refuses the object
     * @throws io.github.dlpack4j.DlpackException for a torch tensor that torch's {@code __dlpack__} would
     *         refuse but its table exports as if it were plain memory: one that requires gradient, or has
     *         the conjugate or negative bit set (the message names the fix)
     */
    public ExchangeTensor importNoSync(MemorySegment obj) throws Throwable {
        MemorySegment out = OUT.get();
        int status = (int) TWO_POINTER_INVOKER.invokeExact(
                table.get(ADDRESS, DLPackExchangeAPI.MANAGED_TENSOR_FROM_PY_OBJECT_NO_SYNC), obj, out);
        PyErrors.check(status);
        // The deleter runs as any Python producer's does (ProducerDeleter): torch's takes the GIL
        // itself when the tensor's Python object died first (torch then keeps that object alive from
        // C++ and drops it in the deleter), so called on a Java thread without the GIL it would wait
        // for the GIL there (on a virtual thread's carrier, too); deferred to the next GIL holder,
        // it never waits.
        ManagedTensor m = ProducerDeleter.adopt(out.get(ADDRESS, 0), true);
        if (torch != null) { // after the export: its dtype says which of torch's bits can be set
            try {
                torch.refuseUnexportable(obj, false, m.tensor().dtype());
            } catch (Throwable refused) {
                m.close();
                throw refused;
            }
        }
        Device device = m.tensor().device();
        if (device.type() == io.github.dlpack4j.DeviceType.CPU) {
            return new ExchangeTensor(m, 0); // CPU work has no stream (DLPack: NULL on CPU)
        }
        long stream;
        try {
            stream = currentWorkStream(device);
        } catch (RuntimeException e) {
            m.close();
            throw e;
        }
        return new ExchangeTensor(m, stream);
    }

    /**
     * Reads {@code obj} through the producer's borrowed view: {@code reader} gets a tensor valid only
     * while it runs (any later access throws {@link IllegalStateException}).
     *
     * @param <T>    what {@code reader} computes
     * @param obj    an object of the producer's type
     * @param reader reads the tensor; must not keep it
     * @return what {@code reader} returned
     * @throws UnsupportedOperationException if the producer has no such view ({@link #hasDLTensorView()})
     * @throws DlpackException for a torch tensor that requires gradient or has the conjugate or negative
     *         bit set, as {@link #importNoSync(MemorySegment)}
     */
    public <T> T withDLTensorView(MemorySegment obj, Function<Tensor, T> reader) {
        if (!hasDLTensorView()) {
            throw new UnsupportedOperationException("this producer offers no dltensor_from_py_object_no_sync");
        }
        return Gil.with(() -> {
            if (torch != null) {
                torch.refuseUnexportable(obj, false, null);
            }
            try (Arena arena = Arena.ofConfined()) {
                // A versioned struct around the borrowed DLTensor, without deleter: the core's
                // validation and scoped views then apply to the view as to any import.
                MemorySegment managed = arena.allocate(DLManagedTensorVersioned.LAYOUT);
                managed.set(JAVA_INT, DLManagedTensorVersioned.VERSION + DLPackVersion.MAJOR, DlpackVersion.MAJOR);
                managed.set(JAVA_INT, DLManagedTensorVersioned.VERSION + DLPackVersion.MINOR, DlpackVersion.MINOR);
                int status = (int) TWO_POINTER_INVOKER.invokeExact(
                        table.get(ADDRESS, DLPackExchangeAPI.DLTENSOR_FROM_PY_OBJECT_NO_SYNC), obj,
                        managed.asSlice(DLManagedTensorVersioned.DL_TENSOR));
                PyErrors.check(status);
                try (ManagedTensor view = ManagedTensor.adoptVersioned(managed)) {
                    return reader.apply(view.tensor());
                }
            }
        });
    }

    /**
     * A new tensor from the producer's allocator, like a prototype of {@code dtype} and {@code shape}
     * on {@code device} (its contents are whatever the producer's allocator leaves).
     *
     * @param dtype  the element type
     * @param device where the producer allocates
     * @param shape  the extent of each dimension
     * @return the producer's new tensor, owned by the caller
     * @throws DlpackException with the producer's error kind and message if it refuses
     */
    public ManagedTensor allocate(DataType dtype, Device device, long... shape) {
        return Gil.with(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment proto = arena.allocate(DLTensor.LAYOUT);
                MemorySegment shapeArray = arena.allocateFrom(JAVA_LONG, shape);
                proto.set(JAVA_INT, DLTensor.DEVICE + DLDevice.DEVICE_TYPE, device.type().code());
                proto.set(JAVA_INT, DLTensor.DEVICE + DLDevice.DEVICE_ID, device.id());
                proto.set(JAVA_INT, DLTensor.NDIM, shape.length);
                proto.set(JAVA_BYTE, DLTensor.DTYPE + DLDataType.CODE, (byte) dtype.code().code());
                proto.set(JAVA_BYTE, DLTensor.DTYPE + DLDataType.BITS, (byte) dtype.bits());
                proto.set(JAVA_SHORT, DLTensor.DTYPE + DLDataType.LANES, (short) dtype.lanes());
                proto.set(ADDRESS, DLTensor.SHAPE, shapeArray);
                MemorySegment out = arena.allocate(ADDRESS);
                String[] error = ALLOCATION_ERROR.get();
                error[0] = null;
                int status = (int) ALLOCATOR_INVOKER.invokeExact(table.get(ADDRESS, DLPackExchangeAPI.MANAGED_TENSOR_ALLOCATOR),
                        proto, out, MemorySegment.NULL, SET_ERROR);
                if (status != 0) {
                    throw new DlpackException("the producer's allocator refused " + dtype + " " + java.util.Arrays.toString(shape)
                            + " on " + device + ": " + (error[0] == null ? "no reason given" : error[0]));
                }
                return ProducerDeleter.adopt(out.get(ADDRESS, 0), true);
            }
        });
    }

    /** The allocator's {@code SetError}: records the message for the calling thread; never throws into C. */
    private static void setError(MemorySegment errorCtx, MemorySegment kind, MemorySegment message) {
        try {
            String k = kind.address() == 0 ? "Error" : kind.reinterpret(1024).getString(0);
            String m = message.address() == 0 ? "" : message.reinterpret(64 * 1024).getString(0);
            ALLOCATION_ERROR.get()[0] = k + ": " + m;
        } catch (Throwable ignored) {
            // Nothing may reach C.
        }
    }

    /**
     * Hands {@code tensor} to the producer's library as one of its own objects (a torch.Tensor for
     * PyTorch) through {@code managed_tensor_to_py_object_no_sync}: a fresh export that the
     * producer owns, sharing the Java memory.
     *
     * @param tensor the tensor to share; its memory lives until the producer's object lets go
     * @return a new reference to the producer's object, which the caller owns
     * @throws IllegalStateException if {@code tensor} is closed
     */
    public MemorySegment toPyObject(Tensor tensor) {
        MemorySegment export = Dlpack.exportVersioned(tensor);
        return Gil.with(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(ADDRESS);
                int status = (int) TWO_POINTER_INVOKER.invokeExact(
                        table.get(ADDRESS, DLPackExchangeAPI.MANAGED_TENSOR_TO_PY_OBJECT_NO_SYNC), export, out);
                PyErrors.check(status); // the export was stolen either way
                return out.get(ADDRESS, 0);
            }
        });
    }
}
