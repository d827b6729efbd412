package io.github.dlpack4j.abi;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/**
 * {@code struct DLPackExchangeAPIHeader} (DLPack 1.2), 16 bytes: {@code DLPackVersion version;
 * DLPackExchangeAPIHeader* prev_api;}. A consumer checks {@code version.major} and follows
 * {@code prev_api} to an older table it understands.
 */
public final class DLPackExchangeAPIHeader {
    /** The layout. */
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
            DLPackVersion.LAYOUT.withName("version"),
            ADDRESS.withName("prev_api")).withName("DLPackExchangeAPIHeader");
    /** Offset of {@code version}. */
    public static final long VERSION = LAYOUT.byteOffset(groupElement("version"));
    /** Offset of {@code prev_api}. */
    public static final long PREV_API = LAYOUT.byteOffset(groupElement("prev_api"));
    /** Size of the struct. */
    public static final long SIZE = LAYOUT.byteSize();

    private DLPackExchangeAPIHeader() {}
}
