package io.github.dlpack4j.djl;

import static org.assertj.core.api.Assertions.assertThat;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import io.github.dlpack4j.Tensor;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A view ({@code reshape}, {@code get}) of a {@code create()} array that was {@code detach()}ed
 * from its manager: no manager lists the array, so nothing found the Java buffer under it, and the
 * tensor read freed memory once the array and the view were closed and the buffer collected.
 */
class DetachedViewTest {
    @TempDir
    Path dir;

    @Test
    void a_tensor_of_a_view_of_a_detached_array_is_refused_or_reads_every_value_right_after_all_was_freed()
            throws Exception {
        Map<String, String> steps = ForkedJvm.steps(dir.resolve("views.log"), Map.of("MALLOC_PERTURB_", "165"),
                DetachedBaseViews.class);
        assertThat(steps.get("perturb")).as("glibc overwrites freed memory").isEqualTo("165");
        for (String c : List.of("array reshape", "array get", "buffer reshape", "buffer get")) {
            assertThat(steps.get(c)).as(c).satisfiesAnyOf(
                    o -> assertThat(o).startsWith("refused ").contains("duplicate()"),
                    o -> assertThat(o).matches("0 of [1-9][0-9]* values wrong"));
        }
    }

    @Test
    void a_tensor_of_a_duplicate_of_such_a_view_outlives_the_array_and_the_view() throws InterruptedException {
        Tensor t;
        try (NDManager m = NDManager.newBaseManager("PyTorch")) {
            NDArray base = m.create(new float[] {1, 2, 3, 4, 5, 6});
            base.detach();
            try (NDArray view = base.reshape(2, 3); NDArray copy = view.duplicate()) {
                t = DjlTensors.of(copy);
            }
            base.close();
        }
        UseAfterFreeTest.churn();
        assertThat(t.toFloatArray()).containsExactly(1, 2, 3, 4, 5, 6);
        t.close();
    }
}
