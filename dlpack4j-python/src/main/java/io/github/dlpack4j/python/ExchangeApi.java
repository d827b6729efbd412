package io.github.dlpack4j.python;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Device;
import io.github.dlpack4j.DlpackException;
import io.github.dlpack4j.DlpackVersion;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.interpreter.Gil;
import io.github.dlpack4j.python.protocol.ExchangeTable;
import java.util.Optional;
import java.util.function.Function;

/**
 * A producer's DLPack C Exchange API (DLPack 1.3: the type attribute
 * {@code __dlpack_c_exchange_api__}, a capsule named {@code dlpack_exchange_api}), as a consumer uses
 * it: imports without a trip through Python's {@code __dlpack__}, the producer's current work stream,
 * its allocator, a borrowed view, and handing a Java tensor to the producer's library.
 *
 * <p>Tables are found once per Python type and cached (the type is kept alive with its table, which
 * the standard makes static for the life of the process). A table whose major version is not 1 is
 * skipped for the {@code prev_api} it points to. No callback synchronises: the caller orders its
 * work after {@link #currentWorkStream}.
 */
public final class ExchangeApi {
    private final ExchangeTable table;

    private ExchangeApi(ExchangeTable table) {
        this.table = table;
    }

    /**
     * The exchange API of {@code obj}'s type, if it has one this consumer understands (major 1).
     *
     * @param obj an object of the producer's type, e.g. a torch.Tensor
     * @return the type's table, looked up once per type; empty if it has none
     */
    public static Optional<ExchangeApi> fromObject(PyObject obj) {
        return Gil.with(() -> {
            ExchangeTable t = ExchangeTable.forObject(obj.borrow());
            return t == null ? Optional.empty() : Optional.of(t.facade(ExchangeApi::new));
        });
    }

    /** {@return the table's version} */
    public DlpackVersion version() {
        return table.version();
    }

    /** {@return whether the producer offers the optional borrowed {@code DLTensor} view} */
    public boolean hasDLTensorView() {
        return table.hasDLTensorView();
    }

    /**
     * The producer's current work stream on {@code device}; 0 when it has none (the CPU).
     *
     * @param device a device of the producer's
     * @return the stream handle ({@code cudaStream_t} or similar) as an address
     * @throws PythonException if the producer reports an error
     */
    public long currentWorkStream(Device device) {
        return table.currentWorkStream(device);
    }

    /**
     * Imports {@code obj} (an object of the producer's type) without synchronisation: ownership of
     * a fresh {@code DLManagedTensorVersioned}, with the producer's stream at the time.
     *
     * @param obj an object of the producer's type
     * @return the owned import and the stream to wait for before reading it
     * @throws PythonException if the producer refuses the object
     * @throws io.github.dlpack4j.DlpackException for a torch tensor that torch's {@code __dlpack__} would
     *         refuse but its table exports as if it were plain memory: one that requires gradient, or has
     *         the conjugate or negative bit set (the message names the fix)
     */
    public ExchangeTensor importNoSync(PyObject obj) {
        return Gil.with(() -> table.importNoSync(obj.borrow()));
    }

    /**
     * Reads {@code obj} through the producer's borrowed view: {@code reader} gets a tensor valid only
     * while it runs (any later access throws {@link IllegalStateException}).
     *
     * @param <T>    what {@code reader} computes
     * @param obj    an object of the producer's type
     * @param reader reads the tensor; must not keep it
     * @return what {@code reader} returned
     * @throws UnsupportedOperationException if the producer has no such view ({@link #hasDLTensorView()})
     * @throws DlpackException for a torch tensor that requires gradient or has the conjugate or negative
     *         bit set, as {@link #importNoSync(PyObject)}
     */
    public <T> T withDLTensorView(PyObject obj, Function<Tensor, T> reader) {
        return table.withDLTensorView(obj.borrow(), reader); // the table takes the GIL itself
    }

    /**
     * A new tensor from the producer's allocator, like a prototype of {@code dtype} and {@code shape}
     * on {@code device} (its contents are whatever the producer's allocator leaves).
     *
     * @param dtype  the element type
     * @param device where the producer allocates
     * @param shape  the extent of each dimension
     * @return the producer's new tensor, owned by the caller
     * @throws DlpackException with the producer's error kind and message if it refuses
     */
    public ManagedTensor allocate(DataType dtype, Device device, long... shape) {
        return table.allocate(dtype, device, shape);
    }

    /**
     * Hands {@code tensor} to the producer's library as one of its own objects (a torch.Tensor for
     * PyTorch) through {@code managed_tensor_to_py_object_no_sync}: a fresh export that the
     * producer owns, sharing the Java memory.
     *
     * @param tensor the tensor to share; its memory lives until the producer's object lets go
     * @return a new reference to the producer's object
     * @throws IllegalStateException if {@code tensor} is closed
     * @throws io.github.dlpack4j.DlpackException for torch, a tensor it cannot take (a negative stride, a
     *         dtype it lacks), before anything is exported
     */
    public PyObject toPyObject(Tensor tensor) {
        return PyObject.steal(table.toPyObject(tensor));
    }
}
