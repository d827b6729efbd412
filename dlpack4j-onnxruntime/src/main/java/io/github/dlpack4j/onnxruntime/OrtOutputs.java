package io.github.dlpack4j.onnxruntime;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.TensorInfo;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;

/**
 * ORT's output tensors as dlpack4j tensors over ORT's own memory.
 *
 * <p>ORT Java's public accessors copy ({@code getFloatBuffer()}, {@code getByteBuffer()},
 * {@code getValue()}). Underneath them, ORT Java 1.26 (and every release since 1.8) has one private
 * method, {@code OnnxTensor.getBuffer()}, that returns a direct {@code ByteBuffer} over the
 * tensor's data ({@code GetTensorMutableData} of ORT's C API, through JNI's
 * {@code NewDirectByteBuffer}); the public ones copy out of it. dlpack4j reaches it by reflection
 * (ORT's jar is an automatic module, so its packages are open) and checks, for every output, that
 * it gives a direct buffer of exactly the tensor's bytes; where it is missing or gives anything else
 * (another ORT version), outputs are copied with the public {@code getByteBuffer()} instead, which
 * {@link #isZeroCopy()} reports.
 */
final class OrtOutputs {
    /** {@code OnnxTensor.getBuffer()} as {@code (OnnxTensor) -> ByteBuffer}, or null if this ORT has none. */
    private static final MethodHandle GET_BUFFER = findGetBuffer();

    private OrtOutputs() {}

    private static MethodHandle findGetBuffer() {
        try {
            Method m = OnnxTensor.class.getDeclaredMethod("getBuffer");
            if (m.getReturnType() != ByteBuffer.class || Modifier.isStatic(m.getModifiers())) {
                return null;
            }
            m.setAccessible(true);
            return MethodHandles.lookup().unreflect(m);
        } catch (ReflectiveOperationException | RuntimeException notThere) { // InaccessibleObjectException included
            return null;
        }
    }

    /** {@return whether outputs are views of ORT's memory (else copies)} */
    static boolean isZeroCopy() {
        return GET_BUFFER != null;
    }

    /**
     * A tensor over {@code t}'s memory that owns {@code t}: closing the tensor (and every share and
     * export of it) closes {@code t}. On a refusal {@code t} is still the caller's.
     *
     * @param what names {@code t} in refusals ("output 'y'")
     * @throws IllegalArgumentException if its type has no DLPack twin or it is too large to reach
     */
    static Tensor adopt(OnnxTensor t, String what) {
        TensorInfo info = t.getInfo();
        DataType dtype = OrtTypes.fromOrt(info.onnxType);
        if (dtype == null) {
            throw new IllegalArgumentException(what + " is " + info.onnxType + ", which dlpack4j cannot view (it takes "
                    + OrtTypes.names() + "): read it with ORT Java's own getValue()");
        }
        long[] shape = info.getShape();
        long numel = info.getNumElements();
        long bytes = dtype.storageBytes(numel, false);
        if (bytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(what + " has " + bytes + " bytes, but ORT Java reaches at most "
                    + Integer.MAX_VALUE + " bytes of a tensor: make the model's outputs smaller (a smaller batch)");
        }
        if (numel == 0) {
            return Tensor.wrap(MemorySegment.NULL, 0, dtype, shape, rowMajor(shape), t::close);
        }
        ByteBuffer view = GET_BUFFER == null ? null : view(t);
        if (view != null && view.isDirect() && view.capacity() == bytes) {
            // The segment keeps the buffer reachable; the memory under it is ORT's until t.close().
            return Tensor.wrap(MemorySegment.ofBuffer(view), 0, dtype, shape, rowMajor(shape), t::close);
        }
        Tensor copy = Tensor.zeros(dtype, shape);
        MemorySegment.copy(MemorySegment.ofBuffer(t.getByteBuffer()), 0, copy.data(), 0, bytes);
        t.close();
        return copy;
    }

    private static ByteBuffer view(OnnxTensor t) {
        try {
            return (ByteBuffer) GET_BUFFER.invokeExact(t);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable checked) { // getBuffer() declares none
            throw new IllegalStateException("OnnxTensor.getBuffer() failed", checked);
        }
    }

    private static long[] rowMajor(long[] shape) {
        long[] strides = new long[shape.length];
        long step = 1;
        for (int d = shape.length - 1; d >= 0; d--) {
            strides[d] = step;
            step *= Math.max(shape[d], 1);
        }
        return strides;
    }

}
