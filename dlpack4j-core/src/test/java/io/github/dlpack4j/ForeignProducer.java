package io.github.dlpack4j;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.github.dlpack4j.abi.DLDataType;
import io.github.dlpack4j.abi.DLDevice;
import io.github.dlpack4j.abi.DLManagedTensor;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLPackExchangeAPI;
import io.github.dlpack4j.abi.DLPackVersion;
import io.github.dlpack4j.abi.DLTensor;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A stand-in for a native producer in tests: managed structs in memory that Java does not manage,
 * with a deleter (an upcall stub, so not the library's own) that counts its calls per struct.
 */
final class ForeignProducer {
    static final int CAPACITY = ForeignTensor.MAX_NDIM;
    private static final ConcurrentHashMap<Long, AtomicInteger> CALLS = new ConcurrentHashMap<>();
    static final MemorySegment COUNTING_DELETER;

    static {
        try {
            COUNTING_DELETER = Linker.nativeLinker().upcallStub(
                    MethodHandles.lookup().findStatic(ForeignProducer.class, "count",
                            MethodType.methodType(void.class, MemorySegment.class)),
                    DLPackExchangeAPI.DELETER_FN, Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static void count(MemorySegment self) {
        CALLS.computeIfAbsent(self.address(), a -> new AtomicInteger()).incrementAndGet();
    }

    /** How often the counting deleter ran for the struct at {@code ptr}. */
    static int deleterCalls(MemorySegment ptr) {
        AtomicInteger n = CALLS.get(ptr.address());
        return n == null ? 0 : n.get();
    }

    /**
     * A struct with room for {@link #CAPACITY} dimensions, so that any {@code ndim} the validator
     * accepts stays inside memory the test owns, in {@code arena}.
     */
    static MemorySegment struct(Arena arena, boolean versioned) {
        long head = versioned ? DLManagedTensorVersioned.SIZE : DLManagedTensor.SIZE;
        MemorySegment s = arena.allocate(head + 16L * CAPACITY, 16);
        CALLS.remove(s.address()); // the address may have been used by an earlier test's struct
        long dl = dl(versioned);
        s.set(ADDRESS, dl + DLTensor.SHAPE, s.asSlice(head, 8L * CAPACITY));
        s.set(ADDRESS, dl + DLTensor.STRIDES, s.asSlice(head + 8L * CAPACITY, 8L * CAPACITY));
        s.set(ADDRESS, versioned ? DLManagedTensorVersioned.DELETER : DLManagedTensor.DELETER, COUNTING_DELETER);
        if (versioned) {
            s.set(JAVA_INT, DLManagedTensorVersioned.VERSION + DLPackVersion.MAJOR, 1);
            s.set(JAVA_INT, DLManagedTensorVersioned.VERSION + DLPackVersion.MINOR, 3);
        }
        s.set(JAVA_INT, dl + DLTensor.DEVICE + DLDevice.DEVICE_TYPE, 1);
        return s;
    }

    /** A well-formed foreign tensor over {@code data}. */
    static MemorySegment tensor(Arena arena, boolean versioned, MemorySegment data, DataType dtype, long[] shape,
                                long[] strides) {
        MemorySegment s = struct(arena, versioned);
        long dl = dl(versioned);
        s.set(ADDRESS, dl + DLTensor.DATA, data);
        s.set(JAVA_INT, dl + DLTensor.NDIM, shape.length);
        s.set(JAVA_BYTE, dl + DLTensor.DTYPE + DLDataType.CODE, (byte) dtype.code().code());
        s.set(JAVA_BYTE, dl + DLTensor.DTYPE + DLDataType.BITS, (byte) dtype.bits());
        s.set(JAVA_SHORT, dl + DLTensor.DTYPE + DLDataType.LANES, (short) dtype.lanes());
        MemorySegment sh = s.get(ADDRESS, dl + DLTensor.SHAPE).reinterpret(8L * CAPACITY);
        MemorySegment st = s.get(ADDRESS, dl + DLTensor.STRIDES).reinterpret(8L * CAPACITY);
        for (int d = 0; d < shape.length; d++) {
            sh.setAtIndex(JAVA_LONG, d, shape[d]);
            st.setAtIndex(JAVA_LONG, d, strides[d]);
        }
        return s;
    }

    static long dl(boolean versioned) {
        return versioned ? DLManagedTensorVersioned.DL_TENSOR : DLManagedTensor.DL_TENSOR;
    }
}
