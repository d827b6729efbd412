package io.github.dlpack4j.djl;

import static org.assertj.core.api.Assertions.assertThat;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDArray;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/**
 * What {@code of} reads of libtorch's own objects, which DJL does not say: where an array's storage
 * starts and whether libtorch frees it. Were it read wrong, a tensor over libtorch's memory would
 * hold a Java buffer it does not need, or, worse, one over a Java buffer would not hold it.
 */
class TorchArraysTest {
    private static TorchArrays.Storage storage(NDArray a) {
        return TorchArrays.storage((PtNDArray) a);
    }

    private static long address(NDArray a) {
        return MemorySegment.ofBuffer(a.toByteBuffer(true)).address();
    }

    @Test
    void the_layout_of_djls_libtorch_is_known() {
        assertThat(TorchArrays.canReadStorage()).isTrue();
    }

    @Test
    void libtorch_frees_the_memory_of_its_own_results_and_not_that_of_an_array_created_over_a_buffer() {
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            ByteBuffer b = m.allocateDirect(24);
            NDArray created = m.create(b, new Shape(6), DataType.FLOAT32);
            assertThat(storage(created)).isEqualTo(new TorchArrays.Storage(MemorySegment.ofBuffer(b).address(), 24, false));
            NDArray result = created.mul(2);
            assertThat(storage(result)).isEqualTo(new TorchArrays.Storage(address(result), 24, true));
            NDArray fromJavaArray = m.create(new long[] {1, 2, 3});
            assertThat(storage(fromJavaArray).owned()).isFalse();
            assertThat(storage(m.arange(5f)).owned()).isTrue();
        }
    }

    @Test
    void a_view_has_the_storage_of_the_array_it_came_from() {
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            NDArray created = m.create(new float[] {1, 2, 3, 4, 5, 6});
            NDArray row = created.reshape(2, 3).get(1);
            assertThat(storage(row)).isEqualTo(storage(created));
            assertThat(address(row)).isEqualTo(storage(created).start() + 3 * Float.BYTES);
            NDArray result = m.arange(6f);
            assertThat(storage(result.reshape(3, 2).get(2))).isEqualTo(storage(result));
        }
    }
}
