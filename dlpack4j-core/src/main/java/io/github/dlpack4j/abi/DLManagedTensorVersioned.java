package io.github.dlpack4j.abi;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/**
 * {@code struct DLManagedTensorVersioned} (DLPack 1.0 and later), 80 bytes: {@code DLPackVersion
 * version; void* manager_ctx; void (*deleter)(DLManagedTensorVersioned*); uint64_t flags; DLTensor
 * dl_tensor;}.
 */
public final class DLManagedTensorVersioned {
    /** The layout. */
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
            DLPackVersion.LAYOUT.withName("version"),
            ADDRESS.withName("manager_ctx"),
            ADDRESS.withName("deleter"),
            JAVA_LONG.withName("flags"),
            DLTensor.LAYOUT.withName("dl_tensor")).withName("DLManagedTensorVersioned");
    /** Offset of {@code version}. */
    public static final long VERSION = LAYOUT.byteOffset(groupElement("version"));
    /** Offset of {@code manager_ctx}. */
    public static final long MANAGER_CTX = LAYOUT.byteOffset(groupElement("manager_ctx"));
    /** Offset of {@code deleter}. */
    public static final long DELETER = LAYOUT.byteOffset(groupElement("deleter"));
    /** Offset of {@code flags}. */
    public static final long FLAGS = LAYOUT.byteOffset(groupElement("flags"));
    /** Offset of {@code dl_tensor}. */
    public static final long DL_TENSOR = LAYOUT.byteOffset(groupElement("dl_tensor"));
    /** Size of the struct. */
    public static final long SIZE = LAYOUT.byteSize();

    private DLManagedTensorVersioned() {}
}
