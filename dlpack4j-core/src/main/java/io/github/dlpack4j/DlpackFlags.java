package io.github.dlpack4j;

/**
 * The bits of {@code DLManagedTensorVersioned.flags}. No other bits are defined by DLPack 1.3; an
 * import that sees one is refused.
 */
public final class DlpackFlags {
    /** The consumer must not write to the data. */
    public static final long READ_ONLY = 1L;
    /** The producer copied the data for this export; nobody else sees writes to it. */
    public static final long IS_COPIED = 1L << 1;
    /** Sub-byte elements are each padded to a whole byte instead of being packed (DLPack 1.1). */
    public static final long IS_SUBBYTE_TYPE_PADDED = 1L << 2;
    /** Every defined bit. */
    public static final long ALL = READ_ONLY | IS_COPIED | IS_SUBBYTE_TYPE_PADDED;

    private DlpackFlags() {}

    /**
     * The names of the set bits, e.g. {@code "READ_ONLY|IS_COPIED"}, or {@code "0"}.
     *
     * @param flags a {@code flags} field of a DLPack struct; undefined bits are shown too
     * @return the names joined by {@code |}
     */
    public static String toString(long flags) {
        StringBuilder sb = new StringBuilder();
        if ((flags & READ_ONLY) != 0) sb.append("READ_ONLY|");
        if ((flags & IS_COPIED) != 0) sb.append("IS_COPIED|");
        if ((flags & IS_SUBBYTE_TYPE_PADDED) != 0) sb.append("IS_SUBBYTE_TYPE_PADDED|");
        long unknown = flags & ~ALL;
        if (unknown != 0) sb.append("0x").append(Long.toHexString(unknown)).append('|');
        return sb.isEmpty() ? "0" : sb.substring(0, sb.length() - 1);
    }
}
