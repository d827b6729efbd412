package io.github.dlpack4j.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.stream.Stream;

import org.apache.arrow.dataset.jni.NativeMemoryPool;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Arrow's dataset library loads from the copy kept in a directory of this user's alone
 * ({@link ArrowLibrary}), its native methods bound as by arrow-dataset's own load, and never twice.
 */
class ArrowLibraryTest {
    @Test
    @Timeout(120)
    void the_library_loads_from_a_kept_copy_its_native_methods_bind_and_nothing_loads_it_again() throws IOException {
        // Another test class in this JVM may have loaded it before: then there is nothing left to load.
        boolean kept = ArrowLibrary.loadKeptCopy();
        assertThat(NativeMemoryPool.getDefault().getBytesAllocated()).isGreaterThanOrEqualTo(0); // a native call
        assertThat(ArrowLibrary.loadKeptCopy()).as("a second load").isFalse();
        if (kept) {
            Path dir = Path.of(System.getProperty("java.io.tmpdir"), "dlpack4j-" + System.getProperty("user.name"));
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir))).isEqualTo("rwx------");
            try (Stream<Path> files = Files.list(dir)) {
                assertThat(files.map(p -> p.getFileName().toString()))
                        .anyMatch(n -> n.matches("libarrow_dataset_jni-[0-9a-f]{8}-[0-9]+\\.so"))
                        .noneMatch(n -> n.endsWith(".part"));
            }
        }
    }
}
