package io.github.dlpack4j.python;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Resident memory of this process. The test JVM runs with a fixed, pre-touched heap
 * ({@code -Xms1g -Xmx1g -XX:+AlwaysPreTouch} in this module's pom), so after warm-up a change of the
 * resident size is native memory: where a leak of Python objects or DLPack structs shows.
 */
final class ProcessMemory {
    private ProcessMemory() {}

    /** VmRSS in KiB, after a garbage collection. */
    static long residentKiB() throws IOException {
        System.gc();
        return residentKiBNow();
    }

    /** VmRSS in KiB as it is (a collection takes long enough for background work to run meanwhile). */
    static long residentKiBNow() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }
}
