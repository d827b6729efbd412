package io.github.dlpack4j.abi;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct DLDataType { uint8_t code; uint8_t bits; uint16_t lanes; }}, 4 bytes. */
public final class DLDataType {
    /** The layout; all three fields are unsigned in C. */
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_BYTE.withName("code"), JAVA_BYTE.withName("bits"), JAVA_SHORT.withName("lanes"))
            .withName("DLDataType");
    /** Offset of {@code code}. */
    public static final long CODE = LAYOUT.byteOffset(groupElement("code"));
    /** Offset of {@code bits}. */
    public static final long BITS = LAYOUT.byteOffset(groupElement("bits"));
    /** Offset of {@code lanes}. */
    public static final long LANES = LAYOUT.byteOffset(groupElement("lanes"));
    /** Size of the struct. */
    public static final long SIZE = LAYOUT.byteSize();

    private DLDataType() {}
}
