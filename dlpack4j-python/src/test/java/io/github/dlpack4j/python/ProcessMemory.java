package io.github.dlpack4j.python;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

/** Resident memory of this process outside what the JVM committed for itself: where native leaks show. */
final class ProcessMemory {
    private ProcessMemory() {}

    /** VmRSS minus the JVM's committed heap and non-heap pools, in KiB, after a GC. */
    static long nativeResidentKiB() throws IOException {
        System.gc();
        var memory = ManagementFactory.getMemoryMXBean();
        long javaKiB = (memory.getHeapMemoryUsage().getCommitted() + memory.getNonHeapMemoryUsage().getCommitted()) / 1024;
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) - javaKiB;
            }
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }
}
