package io.github.dlpack4j.python;

import io.github.dlpack4j.Device;

/**
 * The consumer's stream in a DLPack import: what to pass as {@code __dlpack__(stream=...)}, and how
 * to order the consumer's work after the producer's. CPU tensors have no stream ({@link #NONE}); the
 * CUDA module implements this for CUDA and ROCm streams (values as the Python protocol defines
 * them: for CUDA 1 is the legacy default stream, 2 the per-thread default, larger values stream
 * pointers; for ROCm 0 is the default stream).
 */
public interface DlpackStream {
    /** No stream: CPU data, or a consumer that does not synchronise. */
    DlpackStream NONE = device -> null;

    /**
     * The {@code stream} argument for a producer on {@code device}; null for {@code stream=None}.
     *
     * @param device where the producer's data lives
     * @return the stream value as the Python protocol defines it, or null
     */
    Long streamArgument(Device device);

    /**
     * Makes this stream wait for the producer's current work stream {@code producerStream} (a
     * {@code cudaStream_t} or similar; 0 when the producer has no pending work). Returns false if it
     * cannot, and the import then falls back to {@code __dlpack__}, which synchronises itself.
     *
     * @param producerStream the producer's stream handle as an address, 0 for none
     * @return whether this stream now waits for the producer's work
     */
    default boolean waitFor(long producerStream) {
        return producerStream == 0;
    }
}
