package io.github.dlpack4j;

import io.github.dlpack4j.abi.DLDataType;
import io.github.dlpack4j.abi.DLDevice;
import io.github.dlpack4j.abi.DLManagedTensor;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLPackVersion;
import io.github.dlpack4j.abi.DLTensor;
import java.util.Arrays;

/**
 * Reads a foreign managed tensor once, validates every field before anything else uses it, and
 * builds the {@link ManagedTensor} straight from the validated values.
 *
 * <p>Every rule of DLPack 1.3 that can be checked from the struct is checked here; what cannot be
 * checked is whether the pointers point at memory the producer really owns. The struct is copied
 * into Java values, so a producer that changes it later cannot change what was validated. No
 * intermediate object carries the fields: this runs once per import, and one less allocation there
 * is measurable.
 */
final class ForeignTensor {
    /** No producer uses more; the limit keeps a garbage {@code ndim} from reading far past the arrays. */
    static final int MAX_NDIM = 1024;

    static final DlpackVersion LEGACY = new DlpackVersion(0, 0);

    /** Versions 1.0 to 1.{@value DlpackVersion#MINOR}, made once: producers report one of these, and imports are hot. */
    private static final DlpackVersion[] KNOWN = new DlpackVersion[DlpackVersion.MINOR + 1];

    static {
        for (int minor = 0; minor < KNOWN.length; minor++) {
            KNOWN[minor] = minor == DlpackVersion.MINOR ? DlpackVersion.CURRENT : new DlpackVersion(DlpackVersion.MAJOR, minor);
        }
    }

    private ForeignTensor() {}

    /**
     * The end of user-space addresses on 64-bit Linux (x86-64 with 5-level paging, AArch64 with
     * 52-bit addresses stay below it): host memory above it cannot be the producer's.
     */
    static final long USER_SPACE_END = 1L << 57;

    /** Refuses a pointer that cannot point at an {@code alignment}-aligned object in user space. */
    static void checkPointer(long address, long alignment, String field) {
        if (address < 0 || address >= USER_SPACE_END || (address & (alignment - 1)) != 0) {
            throw new DlpackException(field + " = 0x" + Long.toHexString(address) + ": not a "
                    + (alignment > 1 ? alignment + "-byte aligned " : "") + "user-space address");
        }
    }

    /** The deleter pointer of the managed struct at {@code ptr}, 0 if it has none (a long: no segment kept per import). */
    static long deleterOf(long ptr, boolean versioned) {
        return NativeMemory.word(ptr + (versioned ? DLManagedTensorVersioned.DELETER : DLManagedTensor.DELETER));
    }

    /**
     * Reads and validates the managed struct at {@code p}, then adopts it: the result owns
     * {@code release}. Only validation throws (a {@link RuntimeException}, before anything holds
     * {@code release}); building the result from valid fields cannot fail but for an {@link Error}.
     *
     * @throws DlpackException naming the first field that breaks the standard
     */
    static ManagedTensor read(long p, boolean versioned, ManagedTensor.DeleterCall release) {
        // Read by address from the one segment over the address space: no segment per import. The
        // caller checked the pointer (user space, aligned), so no field address overflows.
        DlpackVersion version = LEGACY;
        long flags = 0;
        long dl;
        String prefix;
        if (versioned) {
            version = version(NativeMemory.int32(p + DLManagedTensorVersioned.VERSION + DLPackVersion.MAJOR),
                    NativeMemory.int32(p + DLManagedTensorVersioned.VERSION + DLPackVersion.MINOR));
            if (version.major() != DlpackVersion.MAJOR) {
                throw new DlpackException("version = " + version + ": this consumer understands major version "
                        + DlpackVersion.MAJOR + " only");
            }
            flags = NativeMemory.word(p + DLManagedTensorVersioned.FLAGS);
            if ((flags & ~DlpackFlags.ALL) != 0) {
                throw new DlpackException("flags = 0x" + Long.toHexString(flags) + ": bits 0x"
                        + Long.toHexString(flags & ~DlpackFlags.ALL) + " are not defined by DLPack " + DlpackVersion.CURRENT);
            }
            dl = p + DLManagedTensorVersioned.DL_TENSOR;
        } else {
            dl = p + DLManagedTensor.DL_TENSOR;
        }
        prefix = "dl_tensor.";
        int ndim = NativeMemory.int32(dl + DLTensor.NDIM);
        if (ndim < 0 || ndim > MAX_NDIM) {
            throw new DlpackException(prefix + "ndim = " + ndim + ": must be between 0 and " + MAX_NDIM);
        }
        Device device = readDevice(dl + DLTensor.DEVICE, prefix);
        DataType dtype = readDtype(dl + DLTensor.DTYPE, prefix);
        long[] shape = readArray(NativeMemory.word(dl + DLTensor.SHAPE), ndim, "dl_tensor.shape");
        // One pass: the first negative extent is refused before an overflow is, as two passes would.
        long numel = 1;
        boolean overflows = false;
        for (int d = 0; d < ndim; d++) {
            long e = shape[d];
            if (e < 0) {
                throw new DlpackException(prefix + "shape[" + d + "] = " + e + ": extents must not be negative");
            }
            if (!overflows) {
                try {
                    numel = Math.multiplyExact(numel, e);
                } catch (ArithmeticException overflow) {
                    overflows = true;
                }
            }
        }
        if (overflows) {
            throw new DlpackException(prefix + "shape = " + Arrays.toString(shape) + ": the element count overflows 64 bits");
        }
        long stridesPtr = NativeMemory.word(dl + DLTensor.STRIDES);
        long[] strides = stridesPtr == 0 && ndim > 0
                ? Shapes.rowMajorStrides(shape) // allowed from producers older than DLPack 1.2
                : ndim == 1 && stridesPtr != 0 && isUnitStride(stridesPtr) ? UNIT_STRIDE
                : readArray(stridesPtr, ndim, "dl_tensor.strides");
        boolean padded = (flags & DlpackFlags.IS_SUBBYTE_TYPE_PADDED) != 0 && dtype.isSubByte();
        Shapes.Extent extent;
        try {
            extent = Shapes.extent(shape, strides, dtype, padded, numel);
        } catch (ArithmeticException overflow) {
            throw new DlpackException(dtype.isSubByte() && !padded
                    ? prefix + "shape = " + Arrays.toString(shape) + ": the packed " + dtype + " data overflows 64 bits"
                    : prefix + "strides = " + Arrays.toString(strides) + " for shape " + Arrays.toString(shape)
                            + ": the extent of the elements overflows 64 bits");
        } catch (IllegalArgumentException notCompact) {
            throw new DlpackException(prefix + "strides = " + Arrays.toString(strides) + ": " + notCompact.getMessage());
        }
        long data = NativeMemory.word(dl + DLTensor.DATA);
        long byteOffset = NativeMemory.word(dl + DLTensor.BYTE_OFFSET);
        if (numel == 0) {
            return ManagedTensor.adopted(versioned, version, flags, release, device, dtype, shape, strides, 0, 0, 0,
                    padded, 0);
        }
        if (data == 0) {
            throw new DlpackException(prefix + "data = NULL, but the tensor has " + numel + " elements");
        }
        if (data < 0 || byteOffset < 0) {
            throw new DlpackException(prefix + (data < 0 ? "data = 0x" + Long.toHexString(data)
                    : "byte_offset = " + Long.toUnsignedString(byteOffset)) + ": beyond the address space");
        }
        long start;
        long end;
        try {
            long first = Math.addExact(data, byteOffset);
            start = Math.addExact(first, extent.minByte());
            end = Math.addExact(first, extent.endByte());
            // Host memory must lie in user space; device pointers need only fit in 64 bits.
            if (start < 0 || (device.type().isHostAccessible() && end > USER_SPACE_END)) {
                throw new ArithmeticException();
            }
        } catch (ArithmeticException outside) {
            throw new DlpackException(prefix + "strides = " + Arrays.toString(strides) + " with data = 0x"
                    + Long.toHexString(data) + " and byte_offset = " + byteOffset
                    + ": the elements reach outside the address space");
        }
        return ManagedTensor.adopted(versioned, version, flags, release, device, dtype, shape, strides, start,
                end - start, -extent.minByte(), padded, numel);
    }

    private static Device readDevice(long at, String prefix) {
        int type = NativeMemory.int32(at + DLDevice.DEVICE_TYPE);
        int id = NativeMemory.int32(at + DLDevice.DEVICE_ID);
        if (type == 1 && id == 0) {
            return Device.CPU;
        }
        try {
            return new Device(DeviceType.of(type), id);
        } catch (DlpackException e) {
            throw new DlpackException(prefix + "device." + e.getMessage());
        }
    }

    private static DataType readDtype(long at, String prefix) {
        int code = NativeMemory.uint8(at + DLDataType.CODE);
        int bits = NativeMemory.uint8(at + DLDataType.BITS);
        int lanes = NativeMemory.uint16(at + DLDataType.LANES);
        try {
            return DataType.of(code, bits, lanes);
        } catch (DlpackException e) {
            throw new DlpackException(prefix + e.getMessage() + " (dtype code " + code + ", bits " + bits + ", lanes "
                    + lanes + ")");
        }
    }

    /** The version {@code major.minor}: a shared instance for 1.0 to the current one. */
    private static DlpackVersion version(int major, int minor) {
        return major == DlpackVersion.MAJOR && minor >= 0 && minor < KNOWN.length ? KNOWN[minor] : new DlpackVersion(major, minor);
    }

    /**
     * Arrays that imports share, as no tensor writes its shape or strides arrays (copies go out, and
     * views make new ones): those of a scalar, and the strides of a compact 1-d tensor.
     */
    private static final long[] NONE = {};
    private static final long[] UNIT_STRIDE = {1};

    /** Whether the one stride at {@code p} (a valid pointer, as {@link #readArray} checks it) is 1. */
    private static boolean isUnitStride(long p) {
        return p > 0 && p < USER_SPACE_END && (p & 7) == 0 && NativeMemory.word(p) == 1;
    }

    private static long[] readArray(long p, int n, String field) {
        if (n == 0) {
            return NONE;
        }
        if (p == 0) {
            throw new DlpackException(field + " = NULL, but ndim = " + n);
        }
        checkPointer(p, 8, field);
        return NativeMemory.longs(p, n);
    }
}
