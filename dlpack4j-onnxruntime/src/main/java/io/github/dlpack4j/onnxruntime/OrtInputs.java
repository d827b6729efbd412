package io.github.dlpack4j.onnxruntime;

import io.github.dlpack4j.DeviceType;
import io.github.dlpack4j.Tensor;
import java.util.Arrays;

/** What a tensor must be for ORT Java to use its memory in place, and the refusals that say so. */
final class OrtInputs {
    /**
     * The most bytes ORT Java takes in one direct buffer: a buffer's capacity is an {@code int}, and
     * ORT 1.26's {@code OrtUtil.prepareBuffer} refuses more than {@code Integer.MAX_VALUE - 8} bytes.
     */
    static final long MAX_BYTES = Integer.MAX_VALUE - 8;

    private OrtInputs() {}

    /**
     * Checks that {@code t} can be given to ORT without a copy; {@code what} names it ("input 'x'").
     *
     * @param writable whether ORT will write into it (a pinned output)
     * @throws IllegalArgumentException naming the problem and the fix
     * @throws IllegalStateException    if {@code t} is closed
     */
    static void check(Tensor t, String what, boolean writable) {
        if (t.isClosed()) {
            throw new IllegalStateException(what + " is closed");
        }
        if (t.device().type() != DeviceType.CPU) {
            throw new IllegalArgumentException(what + " lives on " + t.device() + ", but ORT Java runs on CPU memory: "
                    + "copy it to the CPU first (torch: .cpu())");
        }
        if (OrtTypes.toOrt(t.dtype()) == null) {
            throw new IllegalArgumentException(what + " is " + t.dtype() + ", which ORT Java 1.26 cannot take "
                    + "from memory (it takes " + OrtTypes.names() + "): convert it first (numpy: astype, torch: .to)");
        }
        if (!t.isContiguous()) {
            throw new IllegalArgumentException(what + " is not compact (shape " + Arrays.toString(t.shape())
                    + ", strides " + Arrays.toString(t.strides()) + "): ORT reads row-major memory; "
                    + "pass tensor.copy(), a compact copy, instead");
        }
        if (writable && t.isReadOnly()) {
            throw new IllegalArgumentException(what + " is read-only, but ORT writes the output into it: "
                    + "pass a writable tensor (numpy: a writeable array)");
        }
        long bytes = t.dtype().storageBytes(t.numel(), false);
        if (bytes > MAX_BYTES) {
            throw new IllegalArgumentException(what + " has " + bytes + " bytes, but ORT Java makes tensors over "
                    + "java.nio buffers, which hold at most " + MAX_BYTES + ": split it (a smaller batch)");
        }
    }
}
