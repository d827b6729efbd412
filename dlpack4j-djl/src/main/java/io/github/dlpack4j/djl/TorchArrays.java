package io.github.dlpack4j.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDArray;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;

/**
 * What DJL's public API does not say of a PyTorch array:
 * <ul>
 *   <li>whether its memory is row-major contiguous. {@code NDArray.toByteBuffer(true)} makes a
 *       contiguous copy of an array that is not, attached to the array's manager, so
 *       {@link NDArrayToTensor} asks first, through DJL's own JNI method
 *       {@code PyTorchLibrary.torchIsContiguous} (package-private, found by reflection once, on
 *       the class path, where DJL's PyTorch engine runs);</li>
 *   <li>its libtorch storage ({@link #storage}): where the memory starts, and whether libtorch
 *       frees it. A storage that libtorch allocated frees its memory when the last tensor over it
 *       goes, so an alias is all a tensor needs; one made by {@code from_blob} over a Java buffer
 *       ({@code NDManager.create}) frees nothing, and the buffer must be kept too. DJL's JNI says
 *       neither, so this reads libtorch's own objects, at offsets checked once against arrays whose
 *       answers are known ({@link #canReadStorage()}).</li>
 * </ul>
 * Where either cannot be told (another DJL or libtorch build), every array is copied, and
 * {@link DjlTensors#isView} says so.
 */
final class TorchArrays {
    /** {@code (long handle) -> boolean}, or null if this DJL has no such method. */
    private static final MethodHandle IS_CONTIGUOUS = isContiguousHandle();
    /** The whole address space, to read libtorch's objects at the addresses they are at. */
    private static final MemorySegment MEMORY = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
    /*
     * Offsets in libtorch's C++ objects (LP64, libstdc++), the same in DJL's libtorch 2.7.1 and in
     * torch 2.13's headers. c10::TensorImpl and c10::StorageImpl each start with the vtable and
     * intrusive_ptr_target's reference counts (8 bytes), then their first member: TensorImpl's
     * storage_ (an intrusive_ptr to the StorageImpl), StorageImpl's data_ptr_ (a DataPtr: the data
     * pointer, then ctx_, a unique_ptr<void, DeleterFnPtr> whose libstdc++ tuple puts the deleter
     * before the pointer, then a Device), then size_bytes_ (a SymInt, which holds the byte count
     * itself for a storage of known size).
     */
    private static final long TENSOR_STORAGE = 16;
    private static final long STORAGE_DATA = 16;
    private static final long STORAGE_CONTEXT = 32;
    private static final long STORAGE_BYTES = 48;

    private TorchArrays() {}

    /**
     * A libtorch storage: the memory it starts at and its byte size, and whether libtorch frees
     * that memory when the storage goes. A DataPtr without a context frees nothing (its deleter is
     * never called): {@code from_blob} without a deleter, as DJL makes an array over a buffer, gives
     * that; libtorch's allocators give the context of what they free.
     */
    record Storage(long start, long bytes, boolean owned) {}

    /** Checks libtorch's layout, once, on arrays whose storage is known, before it is read. */
    private static final class Layout {
        static final boolean KNOWN = check();
    }

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

    /** {@return whether {@link #storage} reads this libtorch's objects right} */
    static boolean canReadStorage() {
        return Layout.KNOWN;
    }

    /**
     * {@return the storage under {@code a}} Only after {@link #canReadStorage()}, and only of an
     * array that no other thread may close meanwhile: {@code a}'s libtorch objects are read in
     * place.
     */
    static Storage storage(PtNDArray a) {
        // DJL's handle is a torch::Tensor*; a Tensor is one intrusive_ptr, to its TensorImpl.
        long impl = word(a.getHandle());
        long storage = word(impl + TENSOR_STORAGE);
        if (storage == 0) {
            // A TensorImpl without a storage (MKLDNN, nested): reading through it would read address 16.
            throw new IllegalArgumentException("the array has no storage that dlpack4j-djl can read (" + a.getShape()
                    + " " + a.getDataType() + "): only dense CPU arrays are viewed; duplicate() it first");
        }
        return new Storage(word(storage + STORAGE_DATA), word(storage + STORAGE_BYTES),
                word(storage + STORAGE_CONTEXT) != 0);
    }

    private static long word(long address) {
        return MEMORY.get(ValueLayout.JAVA_LONG, address);
    }

    /**
     * Reads the storage of an array over a Java buffer of 64 bytes, of a view of its second row,
     * and of an array of libtorch's own, and compares with what they must be. The first two reads
     * (the TensorImpl pointer, and its word at offset 16) stay inside objects that exist whatever
     * the layout; the storage they lead to is read only if it is a plausible pointer.
     */
    private static boolean check() {
        try (NDManager m = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            ByteBuffer buffer = m.allocateDirect(64);
            long start = MemorySegment.ofBuffer(buffer).address();
            NDArray lent = m.create(buffer, new Shape(16), DataType.FLOAT32);
            NDArray rows = lent.reshape(4, 4);
            NDArray row = rows.get(1);
            NDArray own = m.zeros(new Shape(16));
            NDScope.unregister(lent, rows, row, own); // the caller's scope, if any, has no part in this
            return plausible((PtNDArray) lent) && plausible((PtNDArray) row) && plausible((PtNDArray) own)
                    && storage((PtNDArray) lent).equals(new Storage(start, 64, false))
                    && storage((PtNDArray) row).equals(new Storage(start, 64, false))
                    && address(row) == start + 16
                    && storage((PtNDArray) own).equals(new Storage(address(own), 64, true));
        } catch (RuntimeException e) {
            return false;
        }
    }

    private static boolean plausible(PtNDArray a) {
        long storage = word(word(a.getHandle()) + TENSOR_STORAGE);
        return storage != 0 && (storage & 7) == 0;
    }

    private static long address(NDArray a) {
        return MemorySegment.ofBuffer(a.toByteBuffer(true)).address();
    }
}
