package io.github.dlpack4j.djl;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * The libtorch builds mapped into this process, read from {@code /proc/self/maps}. DJL's libtorch
 * (2.7.1) and pip's torch ship libraries of the same names ({@code libc10.so},
 * {@code libtorch_cpu.so}), and the dynamic linker binds a library it is asked for by name to the one
 * of that name already loaded: whichever comes second fails to load against the other's symbols
 * (DJL: {@code UnsatisfiedLinkError} inside an {@code EngineException}; Python: {@code ImportError}
 * from {@code import torch}). DJL's build is the one whose directory holds DJL's JNI library
 * ({@code libdjl_torch.so}); every other is foreign.
 */
final class Libtorch {
    private static final Path MAPS = Path.of("/proc/self/maps");
    private static final List<String> LIBRARIES = List.of("libtorch_cpu.so", "libc10.so");

    private Libtorch() {}

    /** {@return the directories of the libtorch builds this process maps (none where it cannot tell)} */
    static Set<Path> loadedDirectories() {
        Set<Path> dirs = new TreeSet<>();
        if (!Files.isReadable(MAPS)) {
            return dirs;
        }
        try (Stream<String> lines = Files.lines(MAPS)) {
            lines.forEach(line -> {
                int slash = line.indexOf('/');
                if (slash >= 0) {
                    Path file = Path.of(line.substring(slash));
                    if (LIBRARIES.contains(String.valueOf(file.getFileName()))) {
                        dirs.add(file.getParent());
                    }
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return dirs;
    }

    /** {@return whether {@code dir} is DJL's own libtorch: DJL unpacks its JNI library beside it} */
    static boolean isDjls(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            return files.anyMatch(f -> f.getFileName().toString().endsWith("libdjl_torch.so"));
        } catch (IOException e) {
            return false;
        }
    }

    /** Throws if a libtorch that is not DJL's is mapped: DJL's engine cannot load, or run, beside it. */
    static void check() {
        for (Path dir : loadedDirectories()) {
            if (!isDjls(dir)) {
                throw new IllegalStateException("another libtorch is loaded in this process, from " + dir
                        + " (torch imported by an embedded Python, or another library); DJL's PyTorch engine ships "
                        + "libtorch 2.7.1 under the same library names, and the dynamic linker binds one to the other, "
                        + "so DJL's engine cannot load beside it (nor Python's torch beside DJL's: import torch fails "
                        + "with ImportError once DJL's engine is loaded). Use one libtorch per process: keep DJL and "
                        + "the embedded interpreter's torch in separate JVMs, or give the embedded interpreter numpy, "
                        + "jax or ONNX Runtime instead of torch");
            }
        }
    }
}
