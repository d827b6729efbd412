package io.github.dlpack4j.internal;

/**
 * The producer's deleter call that {@link io.github.dlpack4j.ManagedTensor} hands its deleter
 * context, with the size of the tensor it frees: so that a context which queues deleter calls (the
 * Python module's, until the GIL is free) can bound its queue by bytes without keeping an object of
 * its own per import. Not API: for dlpack4j's own modules.
 */
public interface TensorDeleter extends Runnable {
    /** {@return the tensor's logical size in bytes (elements times element bytes); 0 for a refused struct} */
    long tensorBytes();
}
