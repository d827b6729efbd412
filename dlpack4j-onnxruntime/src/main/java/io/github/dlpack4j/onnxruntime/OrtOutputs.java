package io.github.dlpack4j.onnxruntime;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import ai.onnxruntime.OnnxJavaType;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OnnxTensorLike;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.TensorInfo;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.internal.RowMajor;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * ORT's output tensors as dlpack4j tensors over ORT's own memory.
 *
 * <p>ORT Java's public accessors copy ({@code getFloatBuffer()}, {@code getByteBuffer()},
 * {@code getValue()}), so the address of a tensor's data comes from ORT's C API, which the JNI
 * library of ORT Java calls itself: {@code OrtApi::GetTensorMutableData(OrtValue*, void**)}, entry
 * 51 of the {@code OrtApi} function table. ORT promises that table is append-only (entries are
 * never moved or removed, whatever the version), so the entry is the same in every ORT release.
 * Two values come from ORT Java's internals by reflection (its jar is an automatic module, so its
 * packages are open to dlpack4j): the {@code OrtApi*} it got at start-up
 * ({@code OnnxRuntime.ortApiHandle}) and each tensor's {@code OrtValue*}
 * ({@code OnnxTensorLike.nativeHandle}). The route is checked once, on a tensor over memory whose
 * address is known, before it is used; where any part is missing or the check fails (another ORT
 * version), outputs are copied once with the public {@code getByteBuffer()} instead, and
 * {@link #isZeroCopy()} says so.
 */
final class OrtOutputs {
    /** The checked route to a tensor's data, or null: outputs are then copied. */
    private static final CApi C_API = CApi.find();

    private OrtOutputs() {}

    /** {@return whether outputs are views of ORT's memory (else copies)} */
    static boolean isZeroCopy() {
        return C_API != null;
    }

    /**
     * A tensor over {@code t}'s memory that owns {@code t}: closing the tensor (and every share and
     * export of it) closes {@code t}. On a refusal {@code t} is still the caller's.
     *
     * @param what names {@code t} in refusals ("output 'y'")
     * @throws IllegalArgumentException if its type has no DLPack twin or it is too large to reach
     */
    static Tensor adopt(OnnxTensor t, String what) {
        TensorInfo info = t.getInfo();
        DataType dtype = OrtTypes.fromOrt(info.onnxType);
        if (dtype == null) {
            throw new IllegalArgumentException(what + " is " + info.onnxType + ", which dlpack4j cannot view (it takes "
                    + OrtTypes.names() + "): read it with ORT Java's own getValue()");
        }
        long[] shape = info.getShape();
        long bytes = dtype.storageBytes(info.getNumElements(), false);
        if (C_API == null && bytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(what + " has " + bytes + " bytes, more than ORT Java's buffers reach: "
                    + "make the model's outputs smaller (a smaller batch)");
        }
        if (bytes == 0) {
            return Tensor.wrap(MemorySegment.NULL, 0, dtype, shape, RowMajor.strides(shape), t::close);
        }
        if (C_API != null) {
            // ORT's memory, valid until t.close(), which the tensor runs once every holder let go.
            MemorySegment data = MemorySegment.ofAddress(C_API.data(t)).reinterpret(bytes);
            return Tensor.wrap(data, 0, dtype, shape, RowMajor.strides(shape), t::close);
        }
        Tensor copy = Tensor.zeros(dtype, shape);
        copy.withData(into -> {
            MemorySegment.copy(MemorySegment.ofBuffer(t.getByteBuffer()), 0, into, 0, bytes);
            return null;
        });
        t.close();
        return copy;
    }

    /** {@code GetTensorMutableData} of ORT's C API, reached through the handles ORT Java holds. */
    private record CApi(VarHandle valueHandle, MethodHandle getTensorMutableData, MethodHandle releaseStatus) {
        /** The {@code OrtApi} entries used, from onnxruntime_c_api.h (the table only ever grows). */
        private static final int GET_TENSOR_MUTABLE_DATA = 51;
        private static final int RELEASE_STATUS = 93;
        private static final ThreadLocal<MemorySegment> OUT =
                ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(ADDRESS));

        /** The route, checked on a tensor over known memory; null if any part of it is not there. */
        static CApi find() {
            try {
                // ORT's start-up (in OrtEnvironment's class initializer) sets the OrtApi*.
                OrtEnvironment.getEnvironment();
                Field apiField = Class.forName("ai.onnxruntime.OnnxRuntime").getDeclaredField("ortApiHandle");
                apiField.setAccessible(true);
                long api = apiField.getLong(null);
                VarHandle handle = MethodHandles.privateLookupIn(OnnxTensorLike.class, MethodHandles.lookup())
                        .findVarHandle(OnnxTensorLike.class, "nativeHandle", long.class);
                if (api == 0) {
                    return null;
                }
                MemorySegment table = MemorySegment.ofAddress(api).reinterpret(ADDRESS.byteSize() * (RELEASE_STATUS + 1));
                Linker linker = Linker.nativeLinker();
                MethodHandle get = linker.downcallHandle(table.getAtIndex(ADDRESS, GET_TENSOR_MUTABLE_DATA),
                        FunctionDescriptor.of(ADDRESS, JAVA_LONG, ADDRESS));
                MethodHandle release = linker.downcallHandle(table.getAtIndex(ADDRESS, RELEASE_STATUS),
                        FunctionDescriptor.ofVoid(ADDRESS));
                CApi route = new CApi(handle, get, release);
                return route.passesTheCheck() ? route : null;
            } catch (ReflectiveOperationException | OrtException | RuntimeException | LinkageError notThere) {
                return null; // InaccessibleObjectException, IllegalCallerException included: copy instead
            }
        }

        /** Whether the route finds the data of a tensor that ORT made over memory of a known address. */
        private boolean passesTheCheck() throws OrtException {
            ByteBuffer known = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
            try (OnnxTensor t = OnnxTensor.createTensor(OrtEnvironment.getEnvironment(), known, new long[] {2},
                    OnnxJavaType.FLOAT)) {
                return data(t) == MemorySegment.ofBuffer(known).address();
            }
        }

        /** {@return the address of {@code t}'s data} */
        long data(OnnxTensor t) {
            MemorySegment out = OUT.get();
            MemorySegment status;
            try {
                status = (MemorySegment) getTensorMutableData.invokeExact((long) valueHandle.get(t), out);
                if (!status.equals(MemorySegment.NULL)) {
                    releaseStatus.invokeExact(status);
                    throw new IllegalStateException("ORT's GetTensorMutableData failed for a " + t.getInfo());
                }
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable impossible) { // the downcalls declare no checked exception
                throw new IllegalStateException(impossible);
            }
            return out.get(ADDRESS, 0).address();
        }
    }
}
