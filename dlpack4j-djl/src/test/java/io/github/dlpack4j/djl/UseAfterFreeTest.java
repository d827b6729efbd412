package io.github.dlpack4j.djl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.types.Shape;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The memory a tensor from {@code of} views stays allocated however the array it came from was made
 * and closed: each test closes every DJL array, collects garbage, reuses the freed memory, and then
 * reads the tensor. Small sizes: a dangling view reads garbage here, where a large one would crash.
 */
class UseAfterFreeTest {
    private static final int N = 64;
    private Leaks leaks;

    @BeforeEach
    void baseline() {
        leaks = Leaks.now();
    }

    @AfterEach
    void nothingLeaks() {
        leaks.assertBack();
    }

    /** Collects garbage, then fills freshly allocated direct memory, which reuses what was freed. */
    static void churn() throws InterruptedException {
        List<ByteBuffer> keep = new ArrayList<>();
        for (int r = 0; r < 5; r++) {
            System.gc();
            Thread.sleep(20);
        }
        for (int i = 0; i < 50; i++) {
            ByteBuffer b = ByteBuffer.allocateDirect(N * 8);
            for (int j = 0; j < b.capacity(); j++) {
                b.put(j, (byte) 0x7f);
            }
            keep.add(b);
        }
        for (int r = 0; r < 3; r++) {
            System.gc();
            Thread.sleep(20);
        }
        assertThat(keep).hasSize(50);
    }

    private static float[] iota(int n, float times) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = i * times;
        }
        return v;
    }

    @Test
    void a_tensor_of_an_array_created_from_a_java_array_outlives_the_array() throws InterruptedException {
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            NDArray a = m.create(iota(N, 1));
            Tensor t = DjlTensors.of(a);
            assertThat(DjlTensors.isView(a)).as("a view, not a copy").isTrue();
            a.close();
            a = null;
            churn();
            assertThat(t.toFloatArray()).containsExactly(iota(N, 1));
            t.close();
        }
    }

    @Test
    void a_tensor_of_an_array_created_over_a_direct_buffer_outlives_the_array_and_the_buffer() throws InterruptedException {
        Tensor t;
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            ByteBuffer b = ByteBuffer.allocateDirect(N * 4).order(ByteOrder.nativeOrder());
            b.asFloatBuffer().put(iota(N, 2));
            NDArray a = m.create(b, new Shape(N), ai.djl.ndarray.types.DataType.FLOAT32);
            t = DjlTensors.of(a);
            a.close();
            a = null;
            b = null;
        }
        churn();
        assertThat(t.toFloatArray()).containsExactly(iota(N, 2));
        t.close();
    }

    @Test
    void a_scope_does_not_close_what_a_tensor_holds() throws InterruptedException {
        Tensor t;
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            try (NDScope s = new NDScope()) {
                t = DjlTensors.of(m.arange((float) N).mul(3));
            }
            assertThat(NDArrayToTensor.HELD.sum()).isEqualTo(leaks.held() + 1);
            churn();
            for (int i = 0; i < 20; i++) {
                m.ones(new Shape(N)).mul(9); // libtorch reuses freed storage
            }
            assertThat(t.toFloatArray()).containsExactly(iota(N, 3));
            t.close();
        }
    }

    @Test
    void a_tensor_of_a_libtorch_view_of_an_array_over_a_tensor_keeps_that_tensors_memory() throws InterruptedException {
        Tensor x;
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            Tensor t0 = Tensor.of(iota(N, 5), N);
            NDArray back = DjlTensors.toNDArray(t0, m);
            NDArray v = back.reshape(N / 2, 2);
            x = DjlTensors.of(v);
            assertThat(DjlTensors.isView(v)).as("a view, not a copy").isTrue();
            assertThat(x.dataPointer()).isEqualTo(t0.dataPointer());
            v.close();
            back.close();
            t0.close();
            back = null;
            churn();
            m.create(new float[] {1}).close(); // two sweeps of the manager's lends
            m.create(new float[] {1}).close();
            churn();
            assertThat(x.toFloatArray()).containsExactly(iota(N, 5));
        }
        churn();
        assertThat(x.toFloatArray()).containsExactly(iota(N, 5));
        x.close();
    }

    @Test
    void a_tensor_of_a_libtorch_slice_of_an_array_over_a_tensor_keeps_that_tensors_memory() throws InterruptedException {
        Tensor x;
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            Tensor t0 = Tensor.of(iota(N, 1), N / 4, 4);
            NDArray back = DjlTensors.toNDArray(t0, m);
            NDArray row = back.get(0); // a view of the first row, inside the lend
            x = DjlTensors.of(row);
            assertThat(DjlTensors.isView(row)).isTrue();
            row.close();
            back.close();
            t0.close();
        }
        churn();
        assertThat(x.toFloatArray()).containsExactly(0, 1, 2, 3);
        x.close();
    }

    @Test
    void a_tensor_of_a_libtorch_view_of_an_array_created_from_a_java_array_outlives_both() throws InterruptedException {
        Tensor x;
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            NDArray a = m.create(iota(N, 7));
            NDArray v = a.reshape(N / 2, 2);
            x = DjlTensors.of(v);
            assertThat(DjlTensors.isView(v)).as("a view, not a copy").isTrue();
            v.close();
            a.close();
            a = null;
            v = null;
        }
        churn();
        assertThat(x.toFloatArray()).containsExactly(iota(N, 7));
        x.close();
    }

    @Test
    void a_tensor_of_a_libtorch_view_of_a_temp_attached_created_array_outlives_both() throws InterruptedException {
        Tensor x;
        try (NDManager m = NDManager.newBaseManager("PyTorch"); NDManager sub = m.newSubManager()) {
            NDArray a = m.create(iota(N, 11));
            a.tempAttach(sub); // in sub's temporary resources only, until sub closes
            NDArray v = a.reshape(N / 2, 2);
            x = DjlTensors.of(v);
            assertThat(DjlTensors.isView(v)).as("a view, not a copy").isTrue();
            v.close();
            a.close();
            a = null;
            v = null;
        }
        churn();
        assertThat(x.toFloatArray()).containsExactly(iota(N, 11));
        x.close();
    }

    @Test
    void an_array_for_a_manager_on_another_device_is_refused() {
        try (NDManager m = NDManager.newBaseManager(Device.gpu(), "PyTorch"); Tensor t = Tensor.zeros(DataType.FLOAT32, 2)) {
            assertThatThrownBy(() -> DjlTensors.toNDArray(t, m)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("gpu").hasMessageContaining("Device.cpu()");
        }
        assertThat(TensorToNDArray.LENT.sum()).isEqualTo(leaks.lent());
    }

    @Test
    void a_detached_array_never_closed_is_collected_and_gives_its_share_back() throws InterruptedException {
        try (NDManager m = NDManager.newBaseManager("PyTorch"); Tensor t = Tensor.of(new float[] {1, 2}, 2)) {
            NDArray a = DjlTensors.toNDArray(t, m);
            a.detach();
            WeakReference<NDArray> ref = new WeakReference<>(a);
            a = null;
            for (int i = 0; i < 100 && (ref.get() != null || TensorToNDArray.LENT.sum() != leaks.lent()); i++) {
                System.gc();
                Thread.sleep(10);
            }
            assertThat(ref.get()).as("the array, collected").isNull();
            assertThat(TensorToNDArray.LENT.sum()).as("its share, given back").isEqualTo(leaks.lent());
        }
    }
}
