package io.github.dlpack4j.onnxruntime;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtException;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import java.util.List;
import java.util.Objects;

/**
 * Single tensors between dlpack4j and ONNX Runtime Java, without copies, for code that builds its
 * own input maps for {@code OrtSession.run} or takes values out of an {@code OrtSession.Result}.
 * {@link DlpackSession} does both for a whole run.
 *
 * <p>The element types that cross, both ways, are {@link #dataTypes()}: float32, float64, float16,
 * bfloat16, int8, int16, int32, int64, uint8 and bool (ORT Java 1.26 makes tensors over memory for
 * no others: no uint16/32/64, complex, FP8 or sub-byte types).
 */
public final class OrtTensors {
    private OrtTensors() {}

    /** {@return the DLPack types that cross to ORT Java and back without a copy} */
    public static List<DataType> dataTypes() {
        return OrtTypes.SUPPORTED;
    }

    /**
     * {@return whether output tensors are views of ORT's memory} True with ORT Java 1.26; false if
     * another ORT version lacks the handles dlpack4j reads (see docs/onnxruntime.md), and outputs
     * are then copied once.
     */
    public static boolean outputsAreZeroCopy() {
        return OrtOutputs.isZeroCopy();
    }

    /**
     * An {@code OnnxTensor} over {@code tensor}'s memory, without a copy, that keeps the memory
     * allocated until the returned handle is closed (or the {@code OnnxTensor} is collected): the
     * tensor may be closed first. Views with a byte offset are fine; ORT reads and writes the
     * memory in place, so a pinned output made this way lands where numpy or torch already look.
     *
     * @param tensor a compact CPU tensor of one of {@link #dataTypes()}, at most
     *               {@code Integer.MAX_VALUE - 8} bytes
     * @return the handle: {@link SharedOnnxTensor#onnxTensor()} gives the {@code OnnxTensor}; close it
     * @throws IllegalArgumentException if ORT cannot use the memory in place (another device, another
     *                                  type, not compact, too large); the message names the fix
     * @throws IllegalStateException    if the tensor is closed
     * @throws OrtException             if ORT refuses to make the tensor (its message kept)
     */
    public static SharedOnnxTensor toOnnxTensor(Tensor tensor) throws OrtException {
        Objects.requireNonNull(tensor, "tensor");
        OrtInputs.check(tensor, "the tensor", false);
        return SharedOnnxTensor.of(tensor, "the tensor");
    }

    /**
     * A tensor over an ORT tensor's memory, without a copy, that takes {@code onnxTensor} over: it is
     * closed when the returned tensor and every share and DLPack export of it have let go, in any
     * order, on any thread, and even after its {@code OrtSession} was closed. Do not close it, or the
     * {@code Result} it came from, yourself afterwards: take the values out of the {@code Result}
     * instead of closing it (a {@code Result} holds no native memory of its own).
     *
     * @param onnxTensor an open ORT tensor of one of {@link #dataTypes()}, such as a run's output
     * @return an owning tensor (the caller closes it) over ORT's memory
     * @throws IllegalArgumentException if its type has no DLPack twin (then {@code onnxTensor} stays
     *                                  the caller's)
     * @throws IllegalStateException    if {@code onnxTensor} is closed
     */
    public static Tensor toTensor(OnnxTensor onnxTensor) {
        Objects.requireNonNull(onnxTensor, "onnxTensor");
        if (onnxTensor.isClosed()) {
            throw new IllegalStateException("the OnnxTensor is closed");
        }
        return OrtOutputs.adopt(onnxTensor, "the OnnxTensor");
    }
}
