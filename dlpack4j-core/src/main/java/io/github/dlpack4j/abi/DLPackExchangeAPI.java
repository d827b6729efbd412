package io.github.dlpack4j.abi;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/**
 * {@code struct DLPackExchangeAPI} (the C Exchange API of DLPack 1.2/1.3), 56 bytes: the header
 * followed by five function pointers. Every callback returns 0 on success and -1 with an error set.
 */
public final class DLPackExchangeAPI {
    /** The layout. */
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
            DLPackExchangeAPIHeader.LAYOUT.withName("header"),
            ADDRESS.withName("managed_tensor_allocator"),
            ADDRESS.withName("managed_tensor_from_py_object_no_sync"),
            ADDRESS.withName("managed_tensor_to_py_object_no_sync"),
            ADDRESS.withName("dltensor_from_py_object_no_sync"),
            ADDRESS.withName("current_work_stream")).withName("DLPackExchangeAPI");
    /** Offset of {@code header}. */
    public static final long HEADER = LAYOUT.byteOffset(groupElement("header"));
    /** Offset of {@code managed_tensor_allocator}. */
    public static final long MANAGED_TENSOR_ALLOCATOR = LAYOUT.byteOffset(groupElement("managed_tensor_allocator"));
    /** Offset of {@code managed_tensor_from_py_object_no_sync}. */
    public static final long MANAGED_TENSOR_FROM_PY_OBJECT_NO_SYNC =
            LAYOUT.byteOffset(groupElement("managed_tensor_from_py_object_no_sync"));
    /** Offset of {@code managed_tensor_to_py_object_no_sync}. */
    public static final long MANAGED_TENSOR_TO_PY_OBJECT_NO_SYNC =
            LAYOUT.byteOffset(groupElement("managed_tensor_to_py_object_no_sync"));
    /** Offset of {@code dltensor_from_py_object_no_sync} (may hold NULL). */
    public static final long DLTENSOR_FROM_PY_OBJECT_NO_SYNC =
            LAYOUT.byteOffset(groupElement("dltensor_from_py_object_no_sync"));
    /** Offset of {@code current_work_stream}. */
    public static final long CURRENT_WORK_STREAM = LAYOUT.byteOffset(groupElement("current_work_stream"));
    /** Size of the struct. */
    public static final long SIZE = LAYOUT.byteSize();

    /**
     * {@code int (*)(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
     * void (*SetError)(void* error_ctx, const char* kind, const char* message))}.
     */
    public static final FunctionDescriptor MANAGED_TENSOR_ALLOCATOR_FN =
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS);
    /** {@code void (*SetError)(void* error_ctx, const char* kind, const char* message)}. */
    public static final FunctionDescriptor SET_ERROR_FN = FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS);
    /** {@code int (*)(void* py_object, DLManagedTensorVersioned** out)}. */
    public static final FunctionDescriptor MANAGED_TENSOR_FROM_PY_OBJECT_NO_SYNC_FN =
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS);
    /** {@code int (*)(DLManagedTensorVersioned* tensor, void** out_py_object)}. */
    public static final FunctionDescriptor MANAGED_TENSOR_TO_PY_OBJECT_NO_SYNC_FN =
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS);
    /** {@code int (*)(void* py_object, DLTensor* out)}. */
    public static final FunctionDescriptor DLTENSOR_FROM_PY_OBJECT_NO_SYNC_FN =
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS);
    /** {@code int (*)(DLDeviceType device_type, int32_t device_id, void** out_current_stream)}. */
    public static final FunctionDescriptor CURRENT_WORK_STREAM_FN =
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS);
    /** {@code void (*deleter)(DLManagedTensor[Versioned]* self)}, the deleter of both managed structs. */
    public static final FunctionDescriptor DELETER_FN = FunctionDescriptor.ofVoid(ADDRESS);

    private DLPackExchangeAPI() {}
}
