package io.github.dlpack4j.python.protocol;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.DeviceType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.DlpackFlags;
import io.github.dlpack4j.DlpackVersion;
import io.github.dlpack4j.ExportRequest;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.abi.DLDataType;
import io.github.dlpack4j.abi.DLDevice;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLPackExchangeAPI;
import io.github.dlpack4j.abi.DLPackExchangeAPIHeader;
import io.github.dlpack4j.abi.DLPackVersion;
import io.github.dlpack4j.abi.DLTensor;
import io.github.dlpack4j.internal.Trampoline;
import io.github.dlpack4j.python.PythonException;
import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.PyErrors;
import io.github.dlpack4j.python.interpreter.RawMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.charset.StandardCharsets;

/**
 * dlpack4j's own DLPack C Exchange API (version 1.3), installed as {@code __dlpack_c_exchange_api__}
 * on {@code dlpack4j.Tensor}: one static table for the life of the process, every callback an
 * upcall that returns 0, or -1 with a Python exception set (the allocator reports through the
 * caller's {@code SetError} instead). Nothing thrown in Java crosses into C.
 *
 * <ul>
 *   <li>{@code managed_tensor_allocator}: a new zeroed Java tensor like the prototype (CPU only);</li>
 *   <li>{@code managed_tensor_from_py_object_no_sync}: a versioned export of a {@code dlpack4j.Tensor};</li>
 *   <li>{@code managed_tensor_to_py_object_no_sync}: a foreign {@code DLManagedTensorVersioned} as a
 *       new {@code dlpack4j.Tensor}, which owns it (its deleter runs when Python frees the object);</li>
 *   <li>{@code dltensor_from_py_object_no_sync}: a borrowed {@code DLTensor}, valid while the object lives;</li>
 *   <li>{@code current_work_stream}: NULL, Java tensors having no streams.</li>
 * </ul>
 */
public final class ExchangeApiProducer {
    private static final MethodHandle SET_ERROR_INVOKER = Linker.nativeLinker().downcallHandle(DLPackExchangeAPI.SET_ERROR_FN);
    private static final MemorySegment TABLE;
    private static MemorySegment capsule;

    static {
        try {
            Arena global = Arena.global();
            TABLE = global.allocate(DLPackExchangeAPI.LAYOUT);
            TABLE.set(JAVA_INT, DLPackExchangeAPI.HEADER + DLPackExchangeAPIHeader.VERSION + DLPackVersion.MAJOR, DlpackVersion.MAJOR);
            TABLE.set(JAVA_INT, DLPackExchangeAPI.HEADER + DLPackExchangeAPIHeader.VERSION + DLPackVersion.MINOR, DlpackVersion.MINOR);
            TABLE.set(ADDRESS, DLPackExchangeAPI.HEADER + DLPackExchangeAPIHeader.PREV_API, MemorySegment.NULL);
            TABLE.set(ADDRESS, DLPackExchangeAPI.MANAGED_TENSOR_ALLOCATOR, stub("allocate", DLPackExchangeAPI.MANAGED_TENSOR_ALLOCATOR_FN,
                    int.class, MemorySegment.class, MemorySegment.class, MemorySegment.class, MemorySegment.class));
            TABLE.set(ADDRESS, DLPackExchangeAPI.MANAGED_TENSOR_FROM_PY_OBJECT_NO_SYNC, stub("fromPyObject",
                    DLPackExchangeAPI.MANAGED_TENSOR_FROM_PY_OBJECT_NO_SYNC_FN, int.class, MemorySegment.class, MemorySegment.class));
            TABLE.set(ADDRESS, DLPackExchangeAPI.MANAGED_TENSOR_TO_PY_OBJECT_NO_SYNC, stub("toPyObject",
                    DLPackExchangeAPI.MANAGED_TENSOR_TO_PY_OBJECT_NO_SYNC_FN, int.class, MemorySegment.class, MemorySegment.class));
            TABLE.set(ADDRESS, DLPackExchangeAPI.DLTENSOR_FROM_PY_OBJECT_NO_SYNC, stub("dltensorView",
                    DLPackExchangeAPI.DLTENSOR_FROM_PY_OBJECT_NO_SYNC_FN, int.class, MemorySegment.class, MemorySegment.class));
            TABLE.set(ADDRESS, DLPackExchangeAPI.CURRENT_WORK_STREAM, stub("currentWorkStream",
                    DLPackExchangeAPI.CURRENT_WORK_STREAM_FN, int.class, int.class, int.class, MemorySegment.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private ExchangeApiProducer() {}

    /**
     * A callback of the table: a trampoline, since the table is static for the life of the process
     * and a consumer may call it after the JVM is gone, when it returns -1 (with no Python exception set).
     */
    private static MemorySegment stub(String name, FunctionDescriptor d, Class<?> ret, Class<?>... params)
            throws ReflectiveOperationException {
        return Trampoline.call(MethodHandles.lookup().findStatic(ExchangeApiProducer.class, name,
                MethodType.methodType(ret, params)), d, -1).address();
    }

    /** The {@code dlpack_exchange_api} capsule around the table, made once; needs the GIL. */
    static MemorySegment capsule() throws Throwable {
        if (capsule == null) {
            capsule = PyErrors.check((MemorySegment) CApi.PyCapsule_New.invokeExact(TABLE,
                    Arena.global().allocateFrom("dlpack_exchange_api"), MemorySegment.NULL));
        }
        return capsule;
    }

    /** The table's address, for tests. */
    public static MemorySegment table() {
        return TABLE;
    }

    /** The {@code size} bytes a caller's pointer argument points to; a NULL one is refused, not written. */
    private static MemorySegment outParameter(MemorySegment pointer, long size) {
        if (pointer.address() == 0) {
            throw new PythonException("ValueError", "dlpack4j's exchange API was given a NULL pointer argument");
        }
        return RawMemory.at(pointer, size);
    }

    private static JavaTensorType.Instance instanceOf(MemorySegment obj) {
        JavaTensorType.Instance in = JavaTensorType.instance(obj);
        if (in == null) {
            throw new PythonException("TypeError", "dlpack4j's exchange API was given an object that is not a dlpack4j.Tensor");
        }
        return in;
    }

    /** {@code managed_tensor_allocator}: errors go to {@code SetError}, not to Python. */
    private static int allocate(MemorySegment prototype, MemorySegment out, MemorySegment errorCtx, MemorySegment setError) {
        try {
            MemorySegment o = outParameter(out, ADDRESS.byteSize());
            MemorySegment p = outParameter(prototype, DLTensor.SIZE);
            int deviceType = p.get(JAVA_INT, DLTensor.DEVICE + DLDevice.DEVICE_TYPE);
            if (deviceType != DeviceType.CPU.code()) {
                throw new IllegalArgumentException("dlpack4j allocates on the CPU only, not on device type " + deviceType);
            }
            DataType dtype = DataType.of(Byte.toUnsignedInt(p.get(JAVA_BYTE, DLTensor.DTYPE + DLDataType.CODE)),
                    Byte.toUnsignedInt(p.get(JAVA_BYTE, DLTensor.DTYPE + DLDataType.BITS)),
                    Short.toUnsignedInt(p.get(JAVA_SHORT, DLTensor.DTYPE + DLDataType.LANES)));
            int ndim = p.get(JAVA_INT, DLTensor.NDIM);
            if (ndim < 0 || ndim > 1024) {
                throw new IllegalArgumentException("prototype ndim " + ndim + " is out of range");
            }
            long[] shape = ndim == 0 ? new long[0]
                    : p.get(ADDRESS, DLTensor.SHAPE).reinterpret(8L * ndim).toArray(JAVA_LONG);
            try (Tensor t = Tensor.zeros(dtype, shape)) {
                o.set(ADDRESS, 0, Dlpack.exportVersioned(t));
            }
            return 0;
        } catch (Throwable t) {
            reportTo(setError, errorCtx, t instanceof OutOfMemoryError ? "MemoryError" : "ValueError",
                    t.getMessage() == null ? t.toString() : t.getMessage());
            return -1;
        }
    }

    private static void reportTo(MemorySegment setError, MemorySegment errorCtx, String kind, String message) {
        if (setError.address() == 0) {
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            SET_ERROR_INVOKER.invokeExact(setError, errorCtx, arena.allocateFrom(kind, StandardCharsets.UTF_8),
                    arena.allocateFrom(message, StandardCharsets.UTF_8));
        } catch (Throwable ignored) {
            // Nothing may reach C.
        }
    }

    /** {@code managed_tensor_from_py_object_no_sync}. */
    private static int fromPyObject(MemorySegment obj, MemorySegment out) {
        try {
            MemorySegment result = outParameter(out, ADDRESS.byteSize()); // checked before anything is made
            result.set(ADDRESS, 0, JavaTensorType.export(instanceOf(obj), ExportRequest.VERSIONED));
            return 0;
        } catch (Throwable t) {
            JavaTensorType.raise(t);
            return -1;
        }
    }

    /** {@code managed_tensor_to_py_object_no_sync}: ownership of {@code managed} passes to the new object. */
    private static int toPyObject(MemorySegment managed, MemorySegment out) {
        try {
            // Adoption deletes a malformed tensor itself. The deleter may run on any thread that lets go
            // last (a re-export's consumer, the cleaner): it runs under the GIL, as capsule imports' do.
            ManagedTensor m = ProducerDeleter.adopt(managed, true);
            try {
                MemorySegment result = outParameter(out, ADDRESS.byteSize());
                result.set(ADDRESS, 0, JavaTensorType.newInstance(m.tensor(), m));
            } catch (Throwable t) {
                m.close(); // ownership was passed either way: the producer's deleter runs now
                throw t;
            }
            return 0;
        } catch (Throwable t) {
            JavaTensorType.raise(t); // a DlpackException (malformed tensor) becomes a BufferError
            return -1;
        }
    }

    /** {@code dltensor_from_py_object_no_sync}: the DLTensor of an export kept with the object. */
    private static int dltensorView(MemorySegment obj, MemorySegment out) {
        try {
            MemorySegment result = outParameter(out, DLTensor.SIZE);
            JavaTensorType.Instance in = instanceOf(obj);
            if ((in.exporter.flags() & (DlpackFlags.READ_ONLY | DlpackFlags.IS_SUBBYTE_TYPE_PADDED)) != 0) {
                throw new PythonException("BufferError", "a DLTensor view cannot say read-only or padded (it has no "
                        + "flags): use managed_tensor_from_py_object_no_sync for this tensor");
            }
            if (in.view == null) { // the GIL, held by every caller, orders this
                in.view = JavaTensorType.export(in, ExportRequest.VERSIONED);
            }
            MemorySegment.copy(RawMemory.at(in.view, DLManagedTensorVersioned.SIZE), DLManagedTensorVersioned.DL_TENSOR,
                    result, 0, DLTensor.SIZE);
            return 0;
        } catch (Throwable t) {
            JavaTensorType.raise(t);
            return -1;
        }
    }

    /** {@code current_work_stream}: Java tensors have no work in flight on any stream. */
    private static int currentWorkStream(int deviceType, int deviceId, MemorySegment out) {
        try {
            outParameter(out, ADDRESS.byteSize()).set(ADDRESS, 0, MemorySegment.NULL);
            return 0;
        } catch (Throwable t) {
            JavaTensorType.raise(t);
            return -1;
        }
    }
}
