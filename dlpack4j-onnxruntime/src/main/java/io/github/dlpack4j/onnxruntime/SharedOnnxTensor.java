package io.github.dlpack4j.onnxruntime;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import io.github.dlpack4j.Tensor;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * An {@link OnnxTensor} over a dlpack4j {@link Tensor}'s memory, and the hold on that memory that
 * keeps it allocated while ORT may read or write it. Made by {@link OrtTensors#toOnnxTensor}.
 *
 * <p>The hold is a {@link Tensor#share()}: closing the dlpack4j tensor first never frees memory under
 * ORT. {@link #close()} closes the {@code OnnxTensor} and lets go of the hold; if it is never
 * called, the hold is let go once the {@code OnnxTensor} is unreachable (its small native handle is
 * then ORT's to leak, as for any unclosed {@code OnnxTensor}).
 */
public final class SharedOnnxTensor implements AutoCloseable {
    /** Releases holds whose {@code OnnxTensor} was collected unclosed. */
    private static final Cleaner CLEANER = Cleaner.create();

    /** ORT's one environment, made on first use (its getter is synchronized: not once per tensor). */
    private static final class Env {
        static final OrtEnvironment ENV = OrtEnvironment.getEnvironment();
    }

    private final OnnxTensor onnxTensor;
    private final Cleaner.Cleanable hold;

    private SharedOnnxTensor(OnnxTensor onnxTensor, Cleaner.Cleanable hold) {
        this.onnxTensor = onnxTensor;
        this.hold = hold;
    }

    /**
     * Shares {@code tensor}'s memory with a new {@code OnnxTensor}; {@code what} names it in refusals.
     * The checks are the caller's ({@link OrtInputs#check}).
     */
    static SharedOnnxTensor of(Tensor tensor, String what) throws OrtException {
        Tensor share = tensor.share();
        OnnxTensor onnx;
        try {
            // A direct buffer: ORT Java makes its OrtValue over the buffer's address (ownsBuffer() is
            // false), and keeps the buffer reachable; the share keeps the memory under it allocated.
            ByteBuffer bytes = share.data().asByteBuffer().order(ByteOrder.nativeOrder());
            onnx = OnnxTensor.createTensor(Env.ENV, bytes, share.shape(), OrtTypes.toOrt(share.dtype()));
        } catch (OrtException e) {
            share.close();
            throw Refusals.withContext(e, "ORT refused to make an OnnxTensor of " + what + " (" + share.dtype() + " "
                    + Arrays.toString(share.shape()) + ")");
        } catch (RuntimeException | Error e) {
            share.close();
            throw e;
        }
        // The cleaning action holds the share (never the OnnxTensor): reachable until close() or until
        // the OnnxTensor, which ORT sessions and the caller may keep, is unreachable.
        return new SharedOnnxTensor(onnx, CLEANER.register(onnx, share::close));
    }

    /**
     * The ORT tensor over the shared memory, valid until {@link #close()}, which closes it.
     *
     * @return the {@code OnnxTensor}, whose {@code ownsBuffer()} is false
     */
    public OnnxTensor onnxTensor() {
        return onnxTensor;
    }

    /** Closes the {@code OnnxTensor}, then lets go of the memory. Idempotent, from any thread. */
    @Override
    public void close() {
        synchronized (this) {
            if (!onnxTensor.isClosed()) {
                onnxTensor.close();
            }
        }
        hold.clean();
    }
}
