package io.github.dlpack4j.djl;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A view of a toNDArray array whose array was closed (its share given back) must be refused
 * by of(), as a view of a detached/closed create() array is; it must never read freed memory.
 */
class LentBaseTest {
    @TempDir
    Path dir;

    @Test
    void aViewOfAClosedLentArrayOrOfAnArrayAtAReusedAddressNeverReadsFreedMemory() throws Exception {
        Map<String, String> steps = ForkedJvm.steps(dir.resolve("lent-base.log"), Map.of("MALLOC_PERTURB_", "165"),
                LentBaseProbes.class);
        new TreeMap<>(steps).forEach((k, v) -> System.out.println(k + ": " + v));
        assertThat(steps.get("perturb")).isEqualTo("165");
        for (String c : new String[] {"lent base closed not indexed", "lent base closed indexed",
                "lent base closed source closed after of", "create view after address reuse"}) {
            assertThat(steps.get(c)).as(c).satisfiesAnyOf(
                    o -> assertThat(o).startsWith("refused "),
                    o -> assertThat(o).contains(" 0 of "));
        }
    }
}
