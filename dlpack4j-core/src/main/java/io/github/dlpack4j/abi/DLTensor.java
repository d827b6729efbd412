package io.github.dlpack4j.abi;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/**
 * {@code struct DLTensor}, 48 bytes: {@code void* data; DLDevice device; int32_t ndim;
 * DLDataType dtype; int64_t* shape; int64_t* strides; uint64_t byte_offset;}.
 */
public final class DLTensor {
    /** The layout. */
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("data"),
            DLDevice.LAYOUT.withName("device"),
            JAVA_INT.withName("ndim"),
            DLDataType.LAYOUT.withName("dtype"),
            ADDRESS.withName("shape"),
            ADDRESS.withName("strides"),
            JAVA_LONG.withName("byte_offset")).withName("DLTensor");
    /** Offset of {@code data}. */
    public static final long DATA = LAYOUT.byteOffset(groupElement("data"));
    /** Offset of {@code device}. */
    public static final long DEVICE = LAYOUT.byteOffset(groupElement("device"));
    /** Offset of {@code ndim}. */
    public static final long NDIM = LAYOUT.byteOffset(groupElement("ndim"));
    /** Offset of {@code dtype}. */
    public static final long DTYPE = LAYOUT.byteOffset(groupElement("dtype"));
    /** Offset of {@code shape}. */
    public static final long SHAPE = LAYOUT.byteOffset(groupElement("shape"));
    /** Offset of {@code strides}. */
    public static final long STRIDES = LAYOUT.byteOffset(groupElement("strides"));
    /** Offset of {@code byte_offset}. */
    public static final long BYTE_OFFSET = LAYOUT.byteOffset(groupElement("byte_offset"));
    /** Size of the struct. */
    public static final long SIZE = LAYOUT.byteSize();

    private DLTensor() {}
}
