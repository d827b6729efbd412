package io.github.dlpack4j;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import io.github.dlpack4j.abi.DLDataType;
import io.github.dlpack4j.abi.DLDevice;
import io.github.dlpack4j.abi.DLManagedTensor;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLPackVersion;
import io.github.dlpack4j.abi.DLTensor;
import java.lang.foreign.MemorySegment;
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
    static long deleterOf(MemorySegment ptr, boolean versioned) {
        return NativeMemory.word(ptr.address() + (versioned ? DLManagedTensorVersioned.DELETER : DLManagedTensor.DELETER));
    }

    /**
     * Reads and validates the managed struct at {@code ptr}, then adopts it: the result owns
     * {@code release}. Only validation throws (a {@link RuntimeException}, before anything holds
     * {@code release}); building the result from valid fields cannot fail but for an {@link Error}.
     *
     * @throws DlpackException naming the first field that breaks the standard
     */
    static ManagedTensor read(MemorySegment ptr, boolean versioned, Runnable release) {
        MemorySegment s = NativeMemory.at(ptr.address(), versioned ? DLManagedTensorVersioned.SIZE : DLManagedTensor.SIZE);
        DlpackVersion version = LEGACY;
        long flags = 0;
        long dl;
        String prefix;
        if (versioned) {
            int major = s.get(JAVA_INT_UNALIGNED, DLManagedTensorVersioned.VERSION + DLPackVersion.MAJOR);
            int minor = s.get(JAVA_INT_UNALIGNED, DLManagedTensorVersioned.VERSION + DLPackVersion.MINOR);
            version = major == DlpackVersion.MAJOR && minor == DlpackVersion.MINOR
                    ? DlpackVersion.CURRENT : new DlpackVersion(major, minor);
            if (version.major() != DlpackVersion.MAJOR) {
                throw new DlpackException("version = " + version + ": this consumer understands major version "
                        + DlpackVersion.MAJOR + " only");
            }
            flags = s.get(JAVA_LONG_UNALIGNED, DLManagedTensorVersioned.FLAGS);
            if ((flags & ~DlpackFlags.ALL) != 0) {
                throw new DlpackException("flags = 0x" + Long.toHexString(flags) + ": bits 0x"
                        + Long.toHexString(flags & ~DlpackFlags.ALL) + " are not defined by DLPack " + DlpackVersion.CURRENT);
            }
            dl = DLManagedTensorVersioned.DL_TENSOR;
        } else {
            dl = DLManagedTensor.DL_TENSOR;
        }
        prefix = "dl_tensor.";
        int ndim = s.get(JAVA_INT_UNALIGNED, dl + DLTensor.NDIM);
        if (ndim < 0 || ndim > MAX_NDIM) {
            throw new DlpackException(prefix + "ndim = " + ndim + ": must be between 0 and " + MAX_NDIM);
        }
        Device device = readDevice(s, dl + DLTensor.DEVICE, prefix);
        DataType dtype = readDtype(s, dl + DLTensor.DTYPE, prefix);
        long[] shape = readArray(s.get(JAVA_LONG_UNALIGNED, dl + DLTensor.SHAPE), ndim, "dl_tensor.shape");
        for (int d = 0; d < ndim; d++) {
            if (shape[d] < 0) {
                throw new DlpackException(prefix + "shape[" + d + "] = " + shape[d] + ": extents must not be negative");
            }
        }
        long numel = 1;
        for (long e : shape) {
            try {
                numel = Math.multiplyExact(numel, e);
            } catch (ArithmeticException overflow) {
                throw new DlpackException(prefix + "shape = " + Arrays.toString(shape) + ": the element count overflows 64 bits");
            }
        }
        long stridesPtr = s.get(JAVA_LONG_UNALIGNED, dl + DLTensor.STRIDES);
        long[] strides = stridesPtr == 0 && ndim > 0
                ? Shapes.rowMajorStrides(shape) // allowed from producers older than DLPack 1.2
                : readArray(stridesPtr, ndim, "dl_tensor.strides");
        boolean padded = (flags & DlpackFlags.IS_SUBBYTE_TYPE_PADDED) != 0 && dtype.isSubByte();
        Shapes.Extent extent;
        try {
            extent = Shapes.extent(shape, strides, dtype, padded);
        } catch (ArithmeticException overflow) {
            throw new DlpackException(dtype.isSubByte() && !padded
                    ? prefix + "shape = " + Arrays.toString(shape) + ": the packed " + dtype + " data overflows 64 bits"
                    : prefix + "strides = " + Arrays.toString(strides) + " for shape " + Arrays.toString(shape)
                            + ": the extent of the elements overflows 64 bits");
        } catch (IllegalArgumentException notCompact) {
            throw new DlpackException(prefix + "strides = " + Arrays.toString(strides) + ": " + notCompact.getMessage());
        }
        long data = s.get(JAVA_LONG_UNALIGNED, dl + DLTensor.DATA);
        long byteOffset = s.get(JAVA_LONG_UNALIGNED, dl + DLTensor.BYTE_OFFSET);
        if (numel == 0) {
            return ManagedTensor.adopted(versioned, version, flags, release, device, dtype, shape, strides, 0, 0, 0,
                    padded);
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
                end - start, -extent.minByte(), padded);
    }

    private static Device readDevice(MemorySegment s, long at, String prefix) {
        int type = s.get(JAVA_INT_UNALIGNED, at + DLDevice.DEVICE_TYPE);
        int id = s.get(JAVA_INT_UNALIGNED, at + DLDevice.DEVICE_ID);
        if (type == 1 && id == 0) {
            return Device.CPU;
        }
        try {
            return new Device(DeviceType.of(type), id);
        } catch (DlpackException e) {
            throw new DlpackException(prefix + "device." + e.getMessage());
        }
    }

    private static DataType readDtype(MemorySegment s, long at, String prefix) {
        int code = s.get(JAVA_BYTE, at + DLDataType.CODE) & 0xFF;
        int bits = s.get(JAVA_BYTE, at + DLDataType.BITS) & 0xFF;
        int lanes = s.get(JAVA_SHORT_UNALIGNED, at + DLDataType.LANES) & 0xFFFF;
        try {
            return DataType.of(code, bits, lanes);
        } catch (DlpackException e) {
            throw new DlpackException(prefix + e.getMessage() + " (dtype code " + code + ", bits " + bits + ", lanes "
                    + lanes + ")");
        }
    }

    private static long[] readArray(long p, int n, String field) {
        if (n == 0) {
            return new long[0];
        }
        if (p == 0) {
            throw new DlpackException(field + " = NULL, but ndim = " + n);
        }
        checkPointer(p, 8, field);
        return NativeMemory.longs(p, n);
    }
}
