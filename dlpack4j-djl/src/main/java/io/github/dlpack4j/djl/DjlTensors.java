package io.github.dlpack4j.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import java.util.List;
import java.util.Objects;

/**
 * Deep Java Library arrays (its PyTorch engine) as dlpack4j {@link Tensor}s and back, without
 * copying the values: a DJL result goes to NumPy, PyTorch, JAX, ONNX Runtime or Arrow through
 * DLPack, and their tensors come back as {@code NDArray}s.
 *
 * <p><b>Types.</b> {@link #dataTypes()}: float32, float64, float16, int8, int32, int64, uint8 and
 * bool, both ways. DJL 0.36's PyTorch engine aborts the process when asked for a bfloat16, int16,
 * uint16, uint32 or uint64 array, so those are refused before DJL is called; so are DJL's
 * {@code COMPLEX64} (the engine makes float32 arrays of it), {@code STRING} and {@code UNKNOWN}, and
 * DLPack types DJL lacks (complex, the float8 and sub-byte types).
 *
 * <p><b>Lifetimes.</b> A tensor from {@link #of} holds a libtorch alias of the array (a second
 * array over the same storage, in no manager and no {@code NDScope}), and what owns memory that
 * libtorch was given: the Java direct buffer under an array from {@code NDManager.create} (or under
 * the array a view of one came from), the tensor under an array from {@link #toNDArray} (or under
 * the array a view of one came from). They are let go when the tensor and every DLPack export of it
 * have let go: the caller may close the array, or its manager, first. A view of an array that was
 * detached from its manager (or closed) is over memory that nothing holds: {@link #of} refuses it,
 * and says to {@code duplicate()} it. An array from
 * {@link #toNDArray} holds a {@link Tensor#share()} of the tensor: the tensor may be closed first.
 * DJL tells nobody when an array is closed, so the share of a closed array is given back at the
 * next {@code toNDArray} on the same manager (each call looks at two earlier arrays), when the
 * manager closes (which closes the array), or once the buffer the array held was collected,
 * whichever comes first; an array detached from its manager ({@code detach()}) keeps the memory
 * until it is closed and collected. Arrays that libtorch derives from it as views ({@code reshape},
 * {@code get}, a transpose) do not hold it: close them before the array, or copy them
 * ({@code duplicate()}), as for any array DJL makes over a buffer.
 *
 * <p><b>What is refused</b>, with the fix in the message: arrays of another engine, on another
 * device than the CPU (and managers on another device, for {@link #toNDArray}), sparse arrays, more than 2 GiB (DJL reaches memory through one
 * {@code ByteBuffer}), tensors that are not row-major contiguous or read-only for
 * {@link #toNDArray}. The one copy: {@link #of} an array that libtorch lays out in another order
 * than row-major (a transpose, a strided slice) copies its values; {@link #isView} tells first.
 *
 * <p>For example:
 * {@snippet :
 * try (NDManager manager = NDManager.newBaseManager("PyTorch");
 *      NDArray x = manager.arange(6f).reshape(2, 3).mul(2);
 *      Tensor t = DjlTensors.of(x)) {                      // [2, 3] float32 over libtorch's memory
 *     t.setDouble(100, 0, 0);                              // x.getFloat(0, 0) is now 100
 *     NDArray back = DjlTensors.toNDArray(t, manager);     // an array over the same memory
 *     back.close();
 * }
 * }
 */
public final class DjlTensors {
    private DjlTensors() {}

    /**
     * Checks that DJL's PyTorch engine can load, and run, in this process: call it before the first
     * {@code NDManager} in a process that also embeds Python. DJL's libtorch (2.7.1) and pip's torch
     * have the same library names ({@code libc10.so}, {@code libtorch_cpu.so}), so one process holds
     * only one of them: after {@code import torch}, DJL's engine fails to load; after DJL's engine,
     * {@code import torch} fails with an {@code ImportError} (numpy, jax and ONNX Runtime are not
     * affected). Neither order crashes; this names the conflict before DJL's own error would.
     *
     * @throws IllegalStateException if a libtorch that is not DJL's is loaded in this process; the
     *                               message names it and the fix
     */
    public static void checkLibtorch() {
        Libtorch.check();
    }

    /** {@return the DLPack types that cross to DJL and back, in the order DJL lists them} */
    public static List<DataType> dataTypes() {
        return DjlTypes.DLPACK;
    }

    /**
     * A tensor over {@code array}'s memory: row-major, of the array's shape and DLPack's twin of its
     * type, without a copy when {@link #isView} says so, else a copy of the values in row-major order.
     *
     * @param array an open PyTorch-engine array on the CPU, dense, at most 2 GiB
     * @return an owning tensor (the caller closes it) that keeps libtorch's memory as long as it, or
     *         an export of it, lives
     * @throws IllegalArgumentException for an array of another engine or device, sparse, of a type
     *                                  without a DLPack twin, or over 2 GiB; the message names the fix
     * @throws IllegalStateException    if the array is closed, or if it is a libtorch view
     *                                  ({@code reshape}, {@code get}) over a Java buffer that no open
     *                                  array holds: a view of an array {@code detach()}ed from its
     *                                  manager, or closed; the message says to pass
     *                                  {@code array.duplicate()}
     */
    public static Tensor of(NDArray array) {
        Objects.requireNonNull(array, "array");
        return NDArrayToTensor.of(array);
    }

    /**
     * {@return whether {@link #of} would view {@code array}'s memory (true) or copy it (false)} An
     * array is viewed when libtorch lays it out row-major contiguous, it holds an element or more,
     * and this DJL and its libtorch let {@link #of} find what keeps its memory (DJL 0.36 with
     * libtorch 2.7.1 do: else every array is copied). A view that {@link #of} refuses (see there)
     * is not told apart here.
     *
     * @param array an array that {@link #of} takes
     * @throws IllegalArgumentException as {@link #of}
     */
    public static boolean isView(NDArray array) {
        Objects.requireNonNull(array, "array");
        return NDArrayToTensor.isView(array);
    }

    /**
     * An array attached to {@code manager} over {@code tensor}'s memory, without a copy (libtorch's
     * {@code from_blob}): writes through either are seen by the other, until DJL's
     * {@code NDArray.set(...)} gives the array memory of its own (DJL puts the values set into a new
     * buffer, so later writes to either no longer reach the other). The memory stays allocated
     * while the array lives, even when the tensor is closed first (see the class comment for when it
     * is given back).
     *
     * @param tensor  an open, writable, row-major contiguous CPU tensor of one of {@link #dataTypes()},
     *                at most 2 GiB
     * @param manager a PyTorch-engine manager; it owns the array
     * @return the array; close it, or its manager
     * @throws IllegalArgumentException for a tensor on another device, not contiguous, read-only, of
     *                                  a type DJL lacks, or over 2 GiB, or a manager of another
     *                                  engine; the message names the fix
     * @throws IllegalStateException    if the tensor is closed
     */
    public static NDArray toNDArray(Tensor tensor, NDManager manager) {
        Objects.requireNonNull(tensor, "tensor");
        Objects.requireNonNull(manager, "manager");
        return TensorToNDArray.toNDArray(tensor, manager);
    }
}
