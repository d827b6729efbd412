package io.github.dlpack4j.abi;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct DLPackVersion { uint32_t major; uint32_t minor; }}, 8 bytes. */
public final class DLPackVersion {
    /** The layout. */
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("major"), JAVA_INT.withName("minor")).withName("DLPackVersion");
    /** Offset of {@code major}. */
    public static final long MAJOR = LAYOUT.byteOffset(groupElement("major"));
    /** Offset of {@code minor}. */
    public static final long MINOR = LAYOUT.byteOffset(groupElement("minor"));
    /** Size of the struct. */
    public static final long SIZE = LAYOUT.byteSize();

    private DLPackVersion() {}
}
