package io.github.dlpack4j.djl;

import static org.assertj.core.api.Assertions.assertThat;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Every order of closing the array, its manager, the tensor and its exports; nothing leaks. */
class LifetimeTest {
    private Leaks leaks;

    @BeforeEach
    void baseline() {
        leaks = Leaks.now();
    }

    @AfterEach
    void nothingLeaks() {
        leaks.assertBack();
    }

    @Test
    void a_tensor_outlives_the_array_it_came_from() {
        Tensor t;
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            NDArray a = m.arange(8f).mul(3);
            t = DjlTensors.of(a);
            a.close();
        }
        assertThat(NDArrayToTensor.HELD.sum()).isEqualTo(leaks.held() + 1);
        assertThat(t.toDoubleArray()).containsExactly(0, 3, 6, 9, 12, 15, 18, 21);
        t.close();
    }

    @Test
    void an_export_outlives_the_tensor_the_array_and_the_manager() {
        MemorySegment export;
        try (NDManager m = NDManager.newBaseManager("PyTorch"); NDArray a = m.arange(5L); Tensor t = DjlTensors.of(a)) {
            export = Dlpack.exportVersioned(t);
        }
        assertThat(NDArrayToTensor.HELD.sum()).as("the export holds the alias").isEqualTo(leaks.held() + 1);
        try (ManagedTensor mt = ManagedTensor.adoptVersioned(export)) {
            assertThat(mt.tensor().toLongArray()).containsExactly(0, 1, 2, 3, 4);
        }
        assertThat(NDArrayToTensor.HELD.sum()).isEqualTo(leaks.held());
    }

    @Test
    void the_array_and_its_manager_may_stay_open_after_the_tensor_closed() {
        try (NDManager m = NDManager.newBaseManager("PyTorch"); NDArray a = m.ones(new ai.djl.ndarray.types.Shape(3))) {
            DjlTensors.of(a).close();
            assertThat(a.toFloatArray()).containsExactly(1f, 1f, 1f);
        }
    }

    @Test
    void an_array_over_a_tensor_outlives_the_tensor() {
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            NDArray a;
            try (Tensor t = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2)) {
                a = DjlTensors.toNDArray(t, m);
            }
            assertThat(a.toFloatArray()).containsExactly(1f, 2f, 3f, 4f);
            assertThat(a.sum().getFloat()).isEqualTo(10f);
            a.close();
        }
    }

    @Test
    void closing_the_manager_closes_an_open_array_and_gives_the_tensor_back() {
        NDManager m = NDManager.newBaseManager("PyTorch");
        try (Tensor t = Tensor.of(new long[] {7, 8}, 2)) {
            NDArray a = DjlTensors.toNDArray(t, m);
            m.close();
            assertThat(a.isReleased()).isTrue();
        }
        assertThat(TensorToNDArray.LENT.sum()).as("given back at the manager's close").isEqualTo(leaks.lent());
    }

    @Test
    void an_array_closed_before_its_manager_gives_the_tensor_back_when_collected() throws InterruptedException {
        try (NDManager m = NDManager.newBaseManager("PyTorch"); Tensor t = Tensor.of(new int[] {1, 2, 3}, 3)) {
            DjlTensors.toNDArray(t, m).close();
            for (int i = 0; i < 100 && TensorToNDArray.LENT.sum() != leaks.lent(); i++) {
                System.gc(); // the buffer the array held is collected: its arena's cleanup closes the share
                Thread.sleep(10);
            }
            assertThat(TensorToNDArray.LENT.sum()).as("given back with the manager still open").isEqualTo(leaks.lent());
        }
    }

    @Test
    void arrays_made_and_closed_in_a_loop_give_their_shares_back_at_the_next_call_without_the_collector() {
        try (NDManager m = NDManager.newBaseManager("PyTorch"); Tensor t = Tensor.of(new float[] {1, 2}, 2)) {
            for (int i = 0; i < 10_000; i++) {
                DjlTensors.toNDArray(t, m).close();
                assertThat(TensorToNDArray.LENT.sum()).as("shares held after call " + i).isLessThanOrEqualTo(leaks.lent() + 1);
            }
        }
    }

    @Test
    void an_array_detached_from_its_manager_keeps_the_memory_after_the_manager_closed() {
        NDArray a;
        try (NDManager m = NDManager.newBaseManager("PyTorch"); Tensor t = Tensor.of(new double[] {1.5, 2.5}, 2)) {
            a = DjlTensors.toNDArray(t, m);
            a.detach();
        }
        System.gc();
        assertThat(a.toDoubleArray()).containsExactly(1.5, 2.5);
        a.close();
    }

    @Test
    void a_tensor_of_an_array_over_a_tensor_keeps_the_first_tensors_memory_after_both_closed() {
        Tensor u;
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            try (Tensor t = Tensor.of(new long[] {4, 5, 6}, 3)) {
                NDArray a = DjlTensors.toNDArray(t, m);
                u = DjlTensors.of(a);
                a.close();
            }
        }
        System.gc();
        assertThat(u.toLongArray()).containsExactly(4, 5, 6);
        u.close();
    }

    @Test
    void a_tensor_of_an_array_over_a_tensor_shares_the_first_tensors_memory() {
        try (NDManager m = NDManager.newBaseManager("PyTorch"); Tensor t = Tensor.of(new float[] {1, 2}, 2);
             NDArray a = DjlTensors.toNDArray(t, m); Tensor u = DjlTensors.of(a)) {
            assertThat(u.dataPointer()).isEqualTo(t.dataPointer());
        }
    }
}
