package io.github.dlpack4j.python.protocol;

import io.github.dlpack4j.Device;
import io.github.dlpack4j.DeviceType;
import io.github.dlpack4j.DlpackException;
import io.github.dlpack4j.DlpackVersion;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.python.DlpackStream;
import io.github.dlpack4j.python.ExchangeTensor;
import io.github.dlpack4j.python.ImportPath;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonException;
import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.Convert;
import io.github.dlpack4j.python.interpreter.Gil;
import io.github.dlpack4j.python.interpreter.PyErrors;
import io.github.dlpack4j.python.interpreter.PyObjects;
import io.github.dlpack4j.python.interpreter.PythonThreads;
import io.github.dlpack4j.python.interpreter.Refs;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * One import of a Python object's tensor, negotiated the way the DLPack Python protocol describes
 * (the consumer's side of {@link io.github.dlpack4j.python.ImportRequest}, which documents the
 * routes): a capsule consumed as it is, the producer type's C Exchange API, {@code __dlpack__} with
 * the request's stream, copy and device, a legacy {@code __dlpack__} called again without them.
 * It records the route taken. Not thread-safe, like the request it serves.
 */
public final class ImportNegotiation {
    private final PyObject source;
    private DlpackStream stream = DlpackStream.NONE;
    private Boolean copy;
    private Device target;
    private ImportPath path;

    /**
     * A negotiation for the tensor of {@code source}, with no stream, no copy policy and no target device.
     *
     * @param source the producer; the caller keeps it open until the import
     */
    public ImportNegotiation(PyObject source) {
        this.source = source;
    }

    /** @param s the consumer's stream */
    public void stream(DlpackStream s) {
        this.stream = s;
    }

    /** @param c the copy policy: {@code TRUE} always, {@code FALSE} never, null if needed */
    public void copy(Boolean c) {
        this.copy = c;
    }

    /** @param device where the consumer wants the data; null for the producer's own device */
    public void toDevice(Device device) {
        this.target = device;
    }

    /** {@return the route the last import took; null before} */
    public ImportPath path() {
        return path;
    }

    /**
     * Where the producer's data lives: {@code __dlpack_device__()}, or the device in a capsule's
     * tensor.
     *
     * @return the producer's device
     * @throws DlpackException if the object offers neither
     */
    public Device device() {
        return Gil.with(() -> {
            MemorySegment o = PyObjects.borrow(source);
            if (Capsules.isCapsule(o)) {
                return Capsules.peekDevice(o);
            }
            if (!source.hasAttr("__dlpack_device__")) {
                throw new DlpackException("object of type " + typeName() + " has no __dlpack_device__");
            }
            try (PyObject d = source.callMethod("__dlpack_device__")) {
                return deviceOf(d);
            }
        });
    }

    /**
     * The {@link Device} of a {@code __dlpack_device__()} result, which DLPack says is a 2-tuple
     * {@code (device_type, device_id)} of ints; anything else is the producer's fault.
     *
     * @throws DlpackException naming the producer's type and what it returned
     */
    private Device deviceOf(PyObject result) {
        Object value = result.toJava();
        if (value instanceof List<?> pair && pair.size() == 2 && isInt(pair.get(0)) && isInt(pair.get(1))) {
            boolean huge = pair.get(0) instanceof java.math.BigInteger || pair.get(1) instanceof java.math.BigInteger;
            long type = ((Number) pair.get(0)).longValue();
            long id = ((Number) pair.get(1)).longValue();
            if (huge || type != (int) type || id != (int) id || id < 0) {
                throw badDevice(result, ": device_type and device_id must be ints in 0..2^31-1", null);
            }
            try {
                return new Device(DeviceType.of((int) type), (int) id);
            } catch (DlpackException e) {
                throw badDevice(result, ": " + e.getMessage(), e);
            }
        }
        throw badDevice(result, ", not a 2-tuple (device_type, device_id) of ints", null);
    }

    /** The producer's type is looked up only here, when a device is refused: it costs Python calls. */
    private DlpackException badDevice(PyObject result, String why, Throwable cause) {
        return new DlpackException("__dlpack_device__ of " + typeName() + " returned " + result.repr() + why, cause);
    }

    /** A Python int as {@link PyObject#toJava()} converts it (bool is an int to Python, but no device). */
    private static boolean isInt(Object o) {
        return o instanceof Long || o instanceof Integer || o instanceof java.math.BigInteger;
    }

    /**
     * Imports the tensor; ownership passes to the returned {@link ManagedTensor}.
     *
     * @return the import; closing it runs the producer's deleter
     * @throws PythonException the producer's own error, with its Python type
     * @throws DlpackException what {@link io.github.dlpack4j.python.ImportRequest#importTensor()} names
     */
    public ManagedTensor importTensor() {
        if (Thread.currentThread().isVirtual()) { // a virtual thread never holds the GIL itself
            return PythonThreads.callUnchecked(this::importTensor);
        }
        // Gil.with spelled out: a hot path, and a lambda here would be one more allocation per import.
        int g = Gil.acquire();
        try {
            return importHoldingGil(this, source, stream, copy, target);
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        } finally {
            Gil.release(g);
        }
    }

    /**
     * {@code new ImportNegotiation(source).importTensor()} without the negotiation object, which
     * nobody asks for its route afterwards ({@code PythonDlpack.fromDlpack}): one allocation less
     * per import.
     *
     * @param source the producer
     * @return the import; closing it runs the producer's deleter
     * @throws PythonException the producer's own error, with its Python type
     * @throws DlpackException what {@link io.github.dlpack4j.python.ImportRequest#importTensor()} names
     */
    public static ManagedTensor importTensor(PyObject source) {
        if (Thread.currentThread().isVirtual()) {
            return PythonThreads.callUnchecked(() -> importTensor(source));
        }
        int g = Gil.acquire();
        try {
            return importHoldingGil(null, source, DlpackStream.NONE, null, null);
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        } finally {
            Gil.release(g);
        }
    }

    /**
     * The import, with the request's settings as arguments; records the route in {@code self}
     * unless that is null (the defaults, {@link #importTensor(PyObject)}).
     */
    private static ManagedTensor importHoldingGil(ImportNegotiation self, PyObject source, DlpackStream stream,
                                                  Boolean copy, Device target) throws Throwable {
        MemorySegment o = PyObjects.borrow(source);
        if (Capsules.isCapsule(o)) {
            record(self, ImportPath.CAPSULE);
            return Capsules.consume(o.address(), copy);
        }
        ProducerType producer = ProducerType.of(o);
        // The C Exchange API never copies and never moves data: used when neither is asked for,
        // and kept only when the consumer's work can be ordered after the producer's (the
        // import itself does not synchronise, so it is safe to drop it otherwise). It refuses what
        // the producer's __dlpack__ refuses (TorchChecks); when the producer fails, __dlpack__ below
        // gives the producer's own answer, so both routes answer alike.
        if (!Boolean.TRUE.equals(copy) && target == null && producer.api() != null) {
            ExchangeTensor e = importThroughTable(producer.api(), o);
            if (e != null) {
                if (e.producerStream() == 0 || stream.waitFor(e.producerStream())) {
                    record(self, ImportPath.EXCHANGE_API);
                    return e.tensor();
                }
                e.close();
            }
        }
        if (producer.torch() != null) {
            producer.torch().refuseUnexportable(o, Boolean.TRUE.equals(copy), null);
        }
        // (Only a request has a stream: self is not null there.)
        Long streamArg = stream == DlpackStream.NONE ? null : stream.streamArgument(target != null ? target : self.device());
        long method = producer.dlpackMethodAddress();
        long capsule = callDlpack(o, method, streamArg, true, copy, target);
        record(self, ImportPath.DLPACK);
        if (capsule == 0) {
            PythonException e = PyErrors.fetchError();
            if (e.pythonType().equals("AttributeError") && !source.hasAttr("__dlpack__")) {
                throw new DlpackException("object of type " + typeName(source) + " does not support DLPack (no __dlpack__)");
            }
            if (!e.pythonType().equals("TypeError")) {
                DlpackException explained = producer.torch() == null ? null : TorchChecks.explain(source, e);
                throw explained != null ? explained : e;
            }
            if (Boolean.TRUE.equals(copy) || target != null) {
                throw new DlpackException("the producer's __dlpack__ predates DLPack 1.0 (" + e.pythonMessage()
                        + ") and cannot honour copy=" + copy + " or dl_device=" + target);
            }
            capsule = callDlpack(o, method, streamArg, false, copy, target);
            if (capsule == 0) {
                throw PyErrors.fetchError();
            }
            record(self, ImportPath.DLPACK_LEGACY_RETRY);
        }
        try {
            if (!Capsules.isCapsule(capsule)) {
                throw new DlpackException("__dlpack__ of " + typeName(source) + " returned "
                        + Convert.str(MemorySegment.ofAddress(capsule)) + ", not a DLPack capsule");
            }
            return Capsules.consume(capsule, copy);
        } finally {
            Refs.decRef(MemorySegment.ofAddress(capsule));
        }
    }

    private static void record(ImportNegotiation self, ImportPath route) {
        if (self != null) {
            self.path = route;
        }
    }

    /** The exchange API's import, or null when the producer failed (its error is cleared). */
    private static ExchangeTensor importThroughTable(ExchangeTable api, MemorySegment o) throws Throwable {
        try {
            return api.importNoSync(o);
        } catch (PythonException producerFailed) {
            return null;
        }
    }

    /**
     * {@code o.__dlpack__(...)}: NULL with the error set on failure; always through
     * {@code PyObject_VectorcallMethod} (no bound method, no kwargs dict). The common requests,
     * {@code max_version=(1, 3)} alone or nothing, pass constant arguments; the others, values made
     * for the call. {@code modern} adds max_version, copy and dl_device as DLPack 1.0 defines them;
     * a legacy call gets only {@code stream}.
     */
    private static long callDlpack(MemorySegment o, long method, Long streamArg, boolean modern, Boolean copy,
                                   Device target) throws Throwable {
        if (streamArg == null && (!modern || (copy == null && target == null))) {
            MemorySegment args = args();
            args.set(ValueLayout.ADDRESS, 0, o);
            args.set(ValueLayout.ADDRESS, 8, maxVersion());
            MemorySegment kwnames = modern ? maxVersionKwnames() : MemorySegment.NULL;
            if (method != 0 && Vectorcall.CALL != null) { // the type's own method, which the lookup below would find (DlpackMethod)
                return (long) Vectorcall.CALL.invokeExact(MemorySegment.ofAddress(method), args, 1L, kwnames);
            }
            return (long) Vectorcall.METHOD.invokeExact(dlpackName(), args, 1L, kwnames);
        }
        List<Object> names = new ArrayList<>();
        List<MemorySegment> values = new ArrayList<>(); // new references, dropped after the call
        try {
            if (streamArg != null) {
                names.add("stream");
                values.add(Convert.toPython(streamArg));
            }
            if (modern) {
                names.add("max_version");
                Refs.incRef(maxVersion());
                values.add(maxVersion());
                if (copy != null) {
                    names.add("copy");
                    values.add(Convert.toPython(copy));
                }
                if (target != null) {
                    names.add("dl_device");
                    values.add(Convert.tupleOf(new Object[] {target.type().code(), target.id()}));
                }
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment args = arena.allocate(ValueLayout.ADDRESS, 1 + values.size());
                args.setAtIndex(ValueLayout.ADDRESS, 0, o);
                for (int i = 0; i < values.size(); i++) {
                    args.setAtIndex(ValueLayout.ADDRESS, 1 + i, values.get(i));
                }
                MemorySegment kwnames = Convert.tupleOf(names.toArray());
                try {
                    return ((MemorySegment) CApi.PyObject_VectorcallMethod.invokeExact(dlpackName(), args, 1L, kwnames))
                            .address();
                } finally {
                    Refs.decRef(kwnames);
                }
            }
        } finally {
            values.forEach(Refs::decRef);
        }
    }

    /**
     * Per thread: self and the max_version value of a vectorcall (freed with the thread, but for
     * the last importer's, which {@link #lastArgs} keeps until another thread imports). A nested
     * call on the same thread reuses it, which is safe because callees read their arguments before
     * running anything that could call back.
     */
    private static final ThreadLocal<Args> ARGS = ThreadLocal.withInitial(Args::new);
    /**
     * The buffer the last import used, found by its owner instead of a {@code ThreadLocal} lookup:
     * imports hold the GIL, so the threads that import take this place in turn at most as often as
     * they take the GIL from each other. Read and written without synchronisation: a thread only
     * uses a buffer it owns ({@link Args#owner} is final).
     */
    private static Args lastArgs;

    /** A thread's buffer of vectorcall arguments. */
    private static final class Args {
        final Thread owner = Thread.currentThread();
        final MemorySegment slots = Arena.ofAuto().allocate(ValueLayout.ADDRESS, 2);
    }

    private static MemorySegment args() {
        Args a = lastArgs;
        if (a == null || a.owner != Thread.currentThread()) {
            a = ARGS.get();
            lastArgs = a;
        }
        return a.slots;
    }
    private static final MemorySegment DUNDER_DLPACK = Arena.global().allocateFrom("__dlpack__");

    /**
     * {@code PyObject_VectorcallMethod} as {@link CApi#PyObject_VectorcallMethod}, returning the
     * result's address as a long: no segment per import for the capsule. Made on first use, which
     * holds the GIL (so Python is started).
     */
    private static final class Vectorcall {
        private static final FunctionDescriptor SIGNATURE = FunctionDescriptor.of(ValueLayout.JAVA_LONG,
                ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS);
        static final MethodHandle METHOD = Linker.nativeLinker().downcallHandle(CApi.symbol("PyObject_VectorcallMethod"),
                SIGNATURE);
        /**
         * {@code PyObject_Vectorcall(callable, args, nargsf, kwnames)}: a function from 3.11 on (in the
         * stable ABI from 3.12); null on 3.10, whose headers inline it, and imports then look the
         * method up by name.
         */
        static final MethodHandle CALL = CApi.findSymbol("PyObject_Vectorcall")
                .map(f -> Linker.nativeLinker().downcallHandle(f, SIGNATURE)).orElse(null);
    }
    // Made once with the GIL held and kept for the life of the process.
    private static MemorySegment maxVersion;
    private static MemorySegment maxVersionKwnames;
    private static MemorySegment dlpackName;

    private static MemorySegment dlpackName() throws Throwable {
        if (dlpackName == null) {
            dlpackName = PyErrors.check((MemorySegment) CApi.PyUnicode_InternFromString.invokeExact(DUNDER_DLPACK));
        }
        return dlpackName;
    }

    private static MemorySegment maxVersion() {
        if (maxVersion == null) {
            maxVersion = Convert.tupleOf(new Object[] {DlpackVersion.MAJOR, DlpackVersion.MINOR});
        }
        return maxVersion;
    }

    /** The kwnames tuple {@code ("max_version",)}, interned so that callees match it by identity. */
    private static MemorySegment maxVersionKwnames() throws Throwable {
        if (maxVersionKwnames == null) {
            MemorySegment name = PyErrors.check((MemorySegment) CApi.PyUnicode_InternFromString.invokeExact(
                    Arena.global().allocateFrom("max_version")));
            maxVersionKwnames = Convert.tuple(new MemorySegment[] {name}, true);
        }
        return maxVersionKwnames;
    }

    private String typeName() {
        return typeName(source);
    }

    private static String typeName(PyObject source) {
        try (PyObject type = source.attr("__class__"); PyObject name = type.attr("__qualname__")) {
            return name.str();
        }
    }
}
