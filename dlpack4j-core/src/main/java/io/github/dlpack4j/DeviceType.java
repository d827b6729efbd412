package io.github.dlpack4j;

/**
 * The device kinds of DLPack 1.3 ({@code DLDeviceType}), with their C codes.
 *
 * <p>Codes 5 and 6 are unused by the standard and have no constant.
 */
public enum DeviceType {
    /** Host memory, code 1. */
    CPU(1),
    /** CUDA device memory, code 2. */
    CUDA(2),
    /** Pinned CUDA host memory ({@code cudaMallocHost}), code 3. */
    CUDA_HOST(3),
    /** OpenCL, code 4. */
    OPENCL(4),
    /** Vulkan buffer, code 7. */
    VULKAN(7),
    /** Metal (Apple GPU), code 8. */
    METAL(8),
    /** Verilog simulator buffer, code 9. */
    VPI(9),
    /** ROCm device memory, code 10. */
    ROCM(10),
    /** Pinned ROCm host memory, code 11. */
    ROCM_HOST(11),
    /** Reserved for extension devices, code 12. */
    EXT_DEV(12),
    /** CUDA managed (unified) memory, code 13. */
    CUDA_MANAGED(13),
    /** Intel oneAPI unified shared memory, code 14. */
    ONE_API(14),
    /** WebGPU, code 15. */
    WEBGPU(15),
    /** Qualcomm Hexagon DSP, code 16. */
    HEXAGON(16),
    /** Microsoft MAIA, code 17 (DLPack 1.0). */
    MAIA(17),
    /** AWS Trainium, code 18 (DLPack 1.2). */
    TRN(18);

    private static final DeviceType[] BY_CODE = new DeviceType[19];

    static {
        for (DeviceType t : values()) {
            BY_CODE[t.code] = t;
        }
    }

    private final int code;

    DeviceType(int code) {
        this.code = code;
    }

    /** {@return the C enum value} */
    public int code() {
        return code;
    }

    /**
     * The device type with the given C code.
     *
     * @param code a {@code DLDeviceType} value
     * @return the constant for that value
     * @throws DlpackException if no device type of DLPack 1.3 has that code
     */
    public static DeviceType of(int code) {
        DeviceType t = code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
        if (t == null) {
            throw new DlpackException("device_type = " + code + ": not a DLPack 1.3 device type");
        }
        return t;
    }

    /**
     * {@return whether the CPU can read and write this memory directly} True for host memory, pinned
     * host memory and CUDA managed memory.
     */
    public boolean isHostAccessible() {
        return this == CPU || this == CUDA_HOST || this == ROCM_HOST || this == CUDA_MANAGED;
    }
}
