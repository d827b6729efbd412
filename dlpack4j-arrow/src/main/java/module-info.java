/**
 * Apache Arrow Java vectors as dlpack4j tensors and back, zero-copy, with Arrow's reference counting
 * kept: {@link io.github.dlpack4j.arrow.ArrowTensors}. On the module path grant native access to
 * {@code io.github.dlpack4j.core} as for the rest of dlpack4j; Arrow needs an allocator module
 * ({@code arrow-memory-unsafe} or {@code arrow-memory-netty}) at run time.
 */
module io.github.dlpack4j.arrow {
    requires transitive io.github.dlpack4j.core;
    requires transitive org.apache.arrow.vector;
    requires transitive org.apache.arrow.memory.core;
    requires com.fasterxml.jackson.databind;

    exports io.github.dlpack4j.arrow;
}
