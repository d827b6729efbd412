package io.github.dlpack4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.Dlpack;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class DemoTest {
    @Test
    void theDemoShowsSharedMemoryAndTheDeleterRunningOnce() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Main.demo(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertThat(out).contains("version 1.3").contains("(the same memory, no copy)").contains("[ 4.,  5., 42.]]")
                .contains("the deleter ran exactly once (live exports: 0");
        assertThat(Dlpack.liveExports()).isZero();
    }
}
