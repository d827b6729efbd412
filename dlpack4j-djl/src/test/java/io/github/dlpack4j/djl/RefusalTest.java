package io.github.dlpack4j.djl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.dlpack4j.Tensor;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** What cannot cross, refused before DJL or libtorch is asked, with the fix in the message. */
class RefusalTest {
    private NDManager manager;

    @BeforeEach
    void open() {
        manager = NDManager.newBaseManager("PyTorch");
    }

    @AfterEach
    void close() {
        manager.close();
    }

    @Test
    void types_the_engine_aborts_on_are_refused_before_it_is_asked() {
        for (io.github.dlpack4j.DataType t : java.util.List.of(io.github.dlpack4j.DataType.BFLOAT16,
                io.github.dlpack4j.DataType.INT16, io.github.dlpack4j.DataType.UINT16,
                io.github.dlpack4j.DataType.UINT32, io.github.dlpack4j.DataType.UINT64)) {
            try (Tensor tensor = Tensor.zeros(t, 2)) {
                assertThatThrownBy(() -> DjlTensors.toNDArray(tensor, manager))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("aborts the process on " + t).hasMessageContaining("convert it to one of");
            }
        }
        try (Tensor tensor = Tensor.zeros(io.github.dlpack4j.DataType.COMPLEX64, 2)) {
            assertThatThrownBy(() -> DjlTensors.toNDArray(tensor, manager))
                    .hasMessageContaining("DJL has no complex64 type");
        }
    }

    @Test
    void a_tensor_that_is_not_row_major_or_is_read_only_is_refused_with_copy_as_the_fix() {
        try (Tensor t = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
            assertThatThrownBy(() -> DjlTensors.toNDArray(t.transpose(), manager))
                    .hasMessageContaining("not contiguous").hasMessageContaining("pass copy() of it");
            assertThatThrownBy(() -> DjlTensors.toNDArray(t.readOnly(), manager))
                    .hasMessageContaining("read-only").hasMessageContaining("pass copy() of it");
        }
    }

    @Test
    void more_than_2_GiB_is_refused_both_ways_naming_the_split() {
        long n = 3L << 30;
        // toNDArray: a tensor over address space that is never touched
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment huge = arena.allocate(1).reinterpret(n);
            Tensor t = Tensor.wrap(huge, io.github.dlpack4j.DataType.INT8, n);
            assertThatThrownBy(() -> DjlTensors.toNDArray(t, manager))
                    .hasMessageContaining("holds " + n + " bytes").hasMessageContaining("split it along its first dimension");
        }
        // of: libtorch allocates lazily, so an empty 3 GiB array costs no memory until written
        try (NDArray a = manager.create(new Shape(n), DataType.INT8)) {
            assertThatThrownBy(() -> DjlTensors.of(a)).hasMessageContaining("holds " + n + " bytes");
        }
    }

    @Test
    void a_sparse_array_is_refused_with_toDense_as_the_fix() {
        try (NDArray dense = manager.create(new float[] {0, 1, 0, 2}, new Shape(2, 2));
             NDArray sparse = dense.toSparse(ai.djl.ndarray.types.SparseFormat.COO)) {
            assertThatThrownBy(() -> DjlTensors.of(sparse)).hasMessageContaining("sparse").hasMessageContaining("toDense()");
        }
    }

    @Test
    void a_view_of_a_created_array_detached_from_its_manager_is_refused_with_duplicate_as_the_fix() {
        NDArray base = manager.create(new float[] {1, 2, 3, 4});
        base.detach();
        try (NDArray view = base.reshape(2, 2)) {
            assertThatThrownBy(() -> DjlTensors.of(view)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("detach()ed from its manager").hasMessageContaining("array.duplicate()");
        } finally {
            base.close();
        }
    }

    @Test
    void a_closed_array_or_tensor_is_an_IllegalStateException() {
        NDArray a = manager.arange(3f);
        a.close();
        assertThatThrownBy(() -> DjlTensors.of(a)).isInstanceOf(IllegalStateException.class);
        Tensor t = Tensor.of(new float[] {1}, 1);
        t.close();
        assertThatThrownBy(() -> DjlTensors.toNDArray(t, manager)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void the_types_that_cross_are_listed() {
        assertThat(DjlTensors.dataTypes()).extracting(Object::toString)
                .containsExactly("float32", "float64", "float16", "int8", "int32", "int64", "uint8", "bool");
    }
}
