package io.github.dlpack4j.abi;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/**
 * {@code struct DLManagedTensor} (the legacy, unversioned ABI), 64 bytes: {@code DLTensor dl_tensor;
 * void* manager_ctx; void (*deleter)(DLManagedTensor*);}.
 */
public final class DLManagedTensor {
    /** The layout. */
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
            DLTensor.LAYOUT.withName("dl_tensor"),
            ADDRESS.withName("manager_ctx"),
            ADDRESS.withName("deleter")).withName("DLManagedTensor");
    /** Offset of {@code dl_tensor}. */
    public static final long DL_TENSOR = LAYOUT.byteOffset(groupElement("dl_tensor"));
    /** Offset of {@code manager_ctx}. */
    public static final long MANAGER_CTX = LAYOUT.byteOffset(groupElement("manager_ctx"));
    /** Offset of {@code deleter}. */
    public static final long DELETER = LAYOUT.byteOffset(groupElement("deleter"));
    /** Size of the struct. */
    public static final long SIZE = LAYOUT.byteSize();

    private DLManagedTensor() {}
}
