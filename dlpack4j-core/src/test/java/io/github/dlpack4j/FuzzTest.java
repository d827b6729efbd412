package io.github.dlpack4j;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.abi.DLDataType;
import io.github.dlpack4j.abi.DLDevice;
import io.github.dlpack4j.abi.DLManagedTensor;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLPackVersion;
import io.github.dlpack4j.abi.DLTensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Seeded mutations of real exported structs. Each case copies a real export into a struct with a
 * counting deleter, breaks one to three fields, and adopts it: the import either succeeds with a
 * tensor that stays inside what the struct describes, or throws {@link DlpackException}; either way
 * the deleter runs exactly once and the JVM lives.
 *
 * <p>Pointers are mutated only to NULL or to other memory the test owns: whether a pointer is
 * valid cannot be checked from Java (nor from C). Cases: {@code -Ddlpack4j.fuzz.cases=N} (default
 * 100,000), seed {@code -Ddlpack4j.fuzz.seed=S}.
 */
@ExtendWith(NoLeaks.class)
class FuzzTest {
    private static final long[] INTERESTING = {0, 1, -1, 2, 3, 6, 7, 8, 64, 255, 256, 1024, 1025, Integer.MAX_VALUE,
            Integer.MIN_VALUE, 1L << 31, 1L << 32, 1L << 62, Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE / 8};

    @Test
    void mutatedExportsAreImportedCorrectlyOrRefusedAndAlwaysDeletedOnce() {
        long cases = Long.getLong("dlpack4j.fuzz.cases", 100_000);
        long seed = Long.getLong("dlpack4j.fuzz.seed", 20261129L);
        SplittableRandom random = new SplittableRandom(seed);
        List<Tensor> sources = List.of(
                Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3),
                Tensor.zeros(DataType.FLOAT4_E2M1FN, 5),
                Tensor.zeros(DataType.COMPLEX128, 2, 1, 2),
                Tensor.of(new long[] {1, 2, 3}, new long[0]).reshape(3).flip(0));
        long accepted = 0;
        long refused = 0;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment spare = arena.allocate(8L * ForeignProducer.CAPACITY, 8);
            MemorySegment[] structs = {ForeignProducer.struct(arena, false), ForeignProducer.struct(arena, true)};
            for (long c = 0; c < cases; c++) {
                Tensor source = sources.get((int) (c % sources.size()));
                boolean versioned = random.nextBoolean();
                MemorySegment p = structs[versioned ? 1 : 0];
                MemorySegment real = versioned ? Dlpack.exportVersioned(source) : Dlpack.exportLegacy(source);
                copyInto(p, real, versioned, source.ndim());
                (versioned ? ManagedTensor.adoptVersioned(real) : ManagedTensor.adoptLegacy(real)).close();
                int mutations = 1 + random.nextInt(3);
                for (int m = 0; m < mutations; m++) {
                    mutate(random, p, versioned, spare);
                }
                int deletesBefore = ForeignProducer.deleterCalls(p);
                try {
                    ManagedTensor t = versioned ? ManagedTensor.adoptVersioned(p) : ManagedTensor.adoptLegacy(p);
                    checkConsistent(t.tensor());
                    t.close();
                    accepted++;
                } catch (DlpackException e) {
                    assertThat(e.getMessage()).isNotBlank();
                    refused++;
                }
                assertThat(ForeignProducer.deleterCalls(p) - deletesBefore).as("deleter calls in case %d", c).isOne();
            }
        } finally {
            sources.forEach(Tensor::close);
        }
        assertThat(accepted + refused).isEqualTo(cases);
        assertThat(accepted).as("some mutations are harmless").isPositive();
        assertThat(refused).as("most mutations are caught").isPositive();
    }

    /** Copies a real export into the test's struct, keeping the struct's own arrays and deleter. */
    private static void copyInto(MemorySegment p, MemorySegment real, boolean versioned, int ndim) {
        long size = versioned ? DLManagedTensorVersioned.SIZE : DLManagedTensor.SIZE;
        long dl = ForeignProducer.dl(versioned);
        long head = size;
        MemorySegment shape = p.asSlice(head, 8L * ForeignProducer.CAPACITY);
        MemorySegment strides = p.asSlice(head + 8L * ForeignProducer.CAPACITY, 8L * ForeignProducer.CAPACITY);
        MemorySegment src = real.reinterpret(size);
        MemorySegment.copy(src, 0, p, 0, size);
        MemorySegment.copy(src.get(ADDRESS, dl + DLTensor.SHAPE).reinterpret(8L * ndim), 0, shape, 0, 8L * ndim);
        MemorySegment.copy(src.get(ADDRESS, dl + DLTensor.STRIDES).reinterpret(8L * ndim), 0, strides, 0, 8L * ndim);
        p.set(ADDRESS, dl + DLTensor.SHAPE, shape);
        p.set(ADDRESS, dl + DLTensor.STRIDES, strides);
        p.set(ADDRESS, versioned ? DLManagedTensorVersioned.DELETER : DLManagedTensor.DELETER, ForeignProducer.COUNTING_DELETER);
    }

    private static long pick(SplittableRandom r) {
        return r.nextInt(4) == 0 ? r.nextLong() : INTERESTING[r.nextInt(INTERESTING.length)];
    }

    private static void mutate(SplittableRandom r, MemorySegment p, boolean versioned, MemorySegment spare) {
        long dl = ForeignProducer.dl(versioned);
        long head = versioned ? DLManagedTensorVersioned.SIZE : DLManagedTensor.SIZE;
        // The struct's own arrays, not its (possibly mutated) pointers.
        MemorySegment shape = p.asSlice(head, 8L * ForeignProducer.CAPACITY);
        MemorySegment strides = p.asSlice(head + 8L * ForeignProducer.CAPACITY, 8L * ForeignProducer.CAPACITY);
        int field = r.nextInt(versioned ? 14 : 12);
        switch (field) {
            case 0 -> p.set(JAVA_INT, dl + DLTensor.NDIM, (int) pick(r));
            case 1 -> p.set(JAVA_INT, dl + DLTensor.NDIM, r.nextInt(-2, 8));
            case 2 -> shape.setAtIndex(JAVA_LONG, r.nextInt(4), pick(r));
            case 3 -> strides.setAtIndex(JAVA_LONG, r.nextInt(4), pick(r));
            case 4 -> p.set(JAVA_LONG, dl + DLTensor.BYTE_OFFSET, pick(r));
            case 5 -> p.set(JAVA_LONG, dl + DLTensor.DATA, r.nextBoolean() ? 0 : pick(r));
            case 6 -> p.set(JAVA_BYTE, dl + DLTensor.DTYPE + DLDataType.CODE, (byte) r.nextInt(0, 24));
            case 7 -> p.set(JAVA_BYTE, dl + DLTensor.DTYPE + DLDataType.BITS, (byte) pick(r));
            case 8 -> p.set(JAVA_SHORT, dl + DLTensor.DTYPE + DLDataType.LANES, (short) r.nextInt(0, 3));
            case 9 -> p.set(JAVA_INT, dl + DLTensor.DEVICE + DLDevice.DEVICE_TYPE, r.nextInt(-1, 21));
            case 10 -> p.set(JAVA_INT, dl + DLTensor.DEVICE + DLDevice.DEVICE_ID, (int) pick(r));
            case 11 -> p.set(ADDRESS, dl + (r.nextBoolean() ? DLTensor.SHAPE : DLTensor.STRIDES),
                    r.nextBoolean() ? MemorySegment.NULL : spare);
            case 12 -> p.set(JAVA_INT, DLManagedTensorVersioned.VERSION + (r.nextBoolean() ? DLPackVersion.MAJOR : DLPackVersion.MINOR),
                    (int) pick(r));
            default -> p.set(JAVA_LONG, DLManagedTensorVersioned.FLAGS, r.nextBoolean() ? r.nextLong(0, 8) : pick(r));
        }
    }

    /** What an accepted import promises, checked without touching the (possibly bogus) data. */
    private static void checkConsistent(Tensor t) {
        long n = 1;
        for (long s : t.shape()) {
            assertThat(s).isNotNegative();
            n = Math.multiplyExact(n, s);
        }
        assertThat(t.numel()).isEqualTo(n);
        assertThat(t.ndim()).isBetween(0, ForeignTensor.MAX_NDIM);
        if (n > 0) {
            assertThat(t.dataPointer()).isPositive();
        }
    }
}
