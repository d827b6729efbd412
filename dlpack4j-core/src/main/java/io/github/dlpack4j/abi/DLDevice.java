package io.github.dlpack4j.abi;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct DLDevice { DLDeviceType device_type; int32_t device_id; }}, 8 bytes. */
public final class DLDevice {
    /** The layout; the C enum is 4 bytes. */
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("device_type"), JAVA_INT.withName("device_id")).withName("DLDevice");
    /** Offset of {@code device_type}. */
    public static final long DEVICE_TYPE = LAYOUT.byteOffset(groupElement("device_type"));
    /** Offset of {@code device_id}. */
    public static final long DEVICE_ID = LAYOUT.byteOffset(groupElement("device_id"));
    /** Size of the struct. */
    public static final long SIZE = LAYOUT.byteSize();

    private DLDevice() {}
}
