package io.github.dlpack4j.djl;

import ai.djl.pytorch.engine.PtNDArray;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.lang.reflect.Method;

/**
 * What DJL's public API does not say of a PyTorch array: whether its memory is row-major
 * contiguous. {@code NDArray.toByteBuffer(true)} makes a contiguous copy of an array that is not,
 * attached to the array's manager, so {@link NDArrayToTensor} asks first, through DJL's own JNI
 * method {@code PyTorchLibrary.torchIsContiguous} (package-private, found by reflection once, on the
 * class path, where DJL's PyTorch engine runs). Without it (another DJL version) every array is
 * copied, and {@link DjlTensors#isView} says so.
 */
final class TorchArrays {
    /** {@code (long handle) -> boolean}, or null if this DJL has no such method. */
    private static final MethodHandle IS_CONTIGUOUS = isContiguousHandle();

    private TorchArrays() {}

    private static MethodHandle isContiguousHandle() {
        try {
            Class<?> lib = Class.forName("ai.djl.pytorch.jni.PyTorchLibrary", false, PtNDArray.class.getClassLoader());
            Field instance = lib.getDeclaredField("LIB");
            instance.setAccessible(true);
            Method m = lib.getDeclaredMethod("torchIsContiguous", long.class);
            m.setAccessible(true);
            return MethodHandles.lookup().unreflect(m).bindTo(instance.get(null))
                    .asType(MethodType.methodType(boolean.class, long.class));
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /** {@return whether {@code a}'s memory is row-major contiguous; false when it cannot be told} */
    static boolean isContiguous(PtNDArray a) {
        if (IS_CONTIGUOUS == null) {
            return false;
        }
        try {
            return (boolean) IS_CONTIGUOUS.invokeExact(a.getHandle().longValue());
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
