package io.github.dlpack4j;

/**
 * A DLPack ABI version ({@code DLPackVersion}).
 *
 * <p>A consumer accepts any minor version of its major version: newer minors only add enum values,
 * which are checked one by one when a tensor is imported.
 *
 * @param major the major version; only {@value #MAJOR} is understood
 * @param minor the minor version
 */
public record DlpackVersion(int major, int minor) implements Comparable<DlpackVersion> {
    /** The major version this library implements. */
    public static final int MAJOR = 1;
    /** The minor version this library implements. */
    public static final int MINOR = 3;
    /** DLPack 1.3, the version written into every export. */
    public static final DlpackVersion CURRENT = new DlpackVersion(MAJOR, MINOR);

    @Override
    public int compareTo(DlpackVersion o) {
        int c = Integer.compareUnsigned(major, o.major);
        return c != 0 ? c : Integer.compareUnsigned(minor, o.minor);
    }

    @Override
    public String toString() {
        return Integer.toUnsignedString(major) + "." + Integer.toUnsignedString(minor);
    }
}
