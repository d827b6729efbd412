package io.github.dlpack4j.python;

import io.github.dlpack4j.Device;
import io.github.dlpack4j.DlpackException;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.python.protocol.ImportNegotiation;
import java.util.Objects;

/**
 * One import of a Python object's tensor into Java, negotiated the way the DLPack Python protocol
 * describes: query {@link #device()}, choose the consumer {@link #stream}, the {@link #copy} policy and
 * optionally a target {@link #toDevice device}, then {@link #importTensor()}. {@link #path()} tells the
 * route taken:
 * <ol>
 *   <li>an object that is a {@code dltensor} / {@code dltensor_versioned} capsule is consumed as it is;</li>
 *   <li>the type's DLPack C Exchange API ({@link ExchangeApi}), when no copy and no other device is
 *       asked for and synchronisation is safe: the producer has no pending work (its current
 *       stream is NULL, as on the CPU) or the consumer's {@link DlpackStream} can wait for it;</li>
 *   <li>{@code __dlpack__(max_version=(1, 3), ...)} with the stream, copy and device requested;</li>
 *   <li>a legacy {@code __dlpack__} that rejects those keywords ({@code TypeError}) is called again
 *       without them.</li>
 * </ol>
 * The result is a {@link ManagedTensor}: a zero-copy view, read-only when the producer says so,
 * whose producer deleter runs (holding the GIL) when Java closes it. Dropping the Python object in
 * the meantime is safe: the producer's managed tensor keeps the data alive.
 *
 * <p>For example:
 * {@snippet :
 * Python py = Python.start();
 * try (PyObject t = py.eval("__import__('torch').arange(4.0)")) {
 *     ImportRequest request = ImportRequest.of(t).copy(false);
 *     try (ManagedTensor m = request.importTensor()) {      // torch's memory, no copy
 *         ImportPath route = request.path();                // EXCHANGE_API for torch 2.13
 *         m.tensor().setDouble(-1, 0);                      // torch sees it
 *     }                                                     // torch's deleter runs
 * }
 * }
 */
public final class ImportRequest {
    private final ImportNegotiation negotiation;

    private ImportRequest(PyObject source) {
        this.negotiation = new ImportNegotiation(source);
    }

    /**
     * A request for the tensor of {@code source} (an array, a tensor, or a DLPack capsule).
     *
     * @param source the producer; the caller keeps it open until the import
     * @return a request with no stream, no copy policy and no target device
     */
    public static ImportRequest of(PyObject source) {
        return new ImportRequest(Objects.requireNonNull(source, "source"));
    }

    /**
     * Where the producer's data lives: {@code __dlpack_device__()}, or the device in a capsule's
     * tensor.
     *
     * @return the producer's device
     * @throws DlpackException if the object offers neither
     */
    public Device device() {
        return negotiation.device();
    }

    /**
     * The consumer's stream (default {@link DlpackStream#NONE}).
     *
     * @param consumerStream the stream the consumer will read on
     * @return this request
     */
    public ImportRequest stream(DlpackStream consumerStream) {
        negotiation.stream(Objects.requireNonNull(consumerStream, "consumerStream"));
        return this;
    }

    /**
     * {@code TRUE}: always copy; {@code FALSE}: never copy (fail if the producer must); null: copy if needed.
     *
     * @param copyPolicy the {@code copy} argument of {@code __dlpack__}
     * @return this request
     */
    public ImportRequest copy(Boolean copyPolicy) {
        negotiation.copy(copyPolicy);
        return this;
    }

    /**
     * Asks the producer for the data on {@code device} ({@code dl_device}); null for its own device.
     *
     * @param device where the consumer wants the data
     * @return this request
     */
    public ImportRequest toDevice(Device device) {
        negotiation.toDevice(device);
        return this;
    }

    /** {@return the route the last {@link #importTensor()} took; null before} */
    public ImportPath path() {
        return negotiation.path();
    }

    /**
     * Imports the tensor; ownership passes to the returned {@link ManagedTensor}.
     *
     * @return the import; closing it runs the producer's deleter
     * @throws PythonException the producer's own error (e.g. {@code BufferError}), with its Python type
     * @throws DlpackException a missing {@code __dlpack__}, a result that is not a DLPack capsule, a
     *                         used capsule, a malformed tensor, or a copy against {@code copy(false)};
     *                         and a {@code torch.Tensor} that DLPack cannot describe as it is: one that
     *                         requires gradient, has the conjugate bit set, the negative bit (unless
     *                         copying), a layout other than strided, or a quantized dtype (the message
     *                         names the fix: {@code detach()}, {@code resolve_conj()},
     *                         {@code resolve_neg()}, {@code to_dense()}, {@code dequantize()})
     */
    public ManagedTensor importTensor() {
        return negotiation.importTensor();
    }
}
