package io.github.dlpack4j;

import java.lang.foreign.MemorySegment;

/**
 * A long-lived tensor container that hands out DLPack exports on request: what
 * {@code PythonDlpack.toPython} turns into a Python object with {@code __dlpack__}, which calls
 * {@link #export} once per request, each time for a fresh managed struct.
 *
 * <p>{@link Tensor} implements it; implement it to make your own container exportable (a buffer on a
 * device, a tensor that lives in another library). The caller has validated the request against
 * {@link #device()} and {@link #flags()} before {@link #export} is called: the device matches, and a
 * legacy request never reaches a read-only exporter unless it asks for a copy.
 *
 * <p>Implementations may be called from any thread, including Python threads that hold the GIL,
 * and must be safe for that.
 */
public interface DlpackExporter {
    /** {@return where the data lives ({@code __dlpack_device__})} */
    Device device();

    /** {@return the element type, for descriptions} */
    DataType dtype();

    /** {@return the extent of each dimension, for descriptions} */
    long[] shape();

    /** {@return the {@link DlpackFlags} every export carries} {@code READ_ONLY} matters before an export is made. */
    long flags();

    /**
     * A fresh managed struct for {@code request}, owned by the caller: a
     * {@code DLManagedTensorVersioned*} when {@link ExportRequest#versioned()}, else a
     * {@code DLManagedTensor*}. It shares the data unless the request asks for a copy
     * ({@code copy() == TRUE}), in which case it holds a copy and, versioned, carries
     * {@link DlpackFlags#IS_COPIED}. It must never copy when {@code copy() == FALSE}.
     *
     * @param request what the consumer asked for: ABI, device, stream and copy, already validated
     * @return the new struct; the caller owns it and calls its deleter exactly once
     * @throws DlpackException when this exporter cannot honour the request (Python sees a
     *                         {@code BufferError}); any other exception is a failure (a
     *                         {@code RuntimeError} there)
     */
    MemorySegment export(ExportRequest request);
}
