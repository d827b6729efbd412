package io.github.dlpack4j.python;

import io.github.dlpack4j.ManagedTensor;

/**
 * A tensor imported through a producer's C Exchange API without synchronisation, with the
 * producer's current work stream at the time of the import (0 on the CPU, or when the producer has
 * no pending work): the consumer must order its own work after that stream before it reads.
 *
 * @param tensor         the owned tensor; close it to run the producer's deleter
 * @param producerStream the producer's current work stream ({@code cudaStream_t} or similar), 0 for none
 */
public record ExchangeTensor(ManagedTensor tensor, long producerStream) implements AutoCloseable {
    /** Closes the tensor. */
    @Override
    public void close() {
        tensor.close();
    }
}
