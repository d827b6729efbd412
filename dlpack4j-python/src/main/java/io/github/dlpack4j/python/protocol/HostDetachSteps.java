package io.github.dlpack4j.python.protocol;

import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.python.interpreter.HostedJvmExit;

/**
 * What the DLPack side lets go of when a Python host destroys the JVM ({@link HostedJvmExit}): no
 * export's deleter reaches Java any more ({@link Dlpack#abandonLiveExports()}), and every
 * {@code dlpack4j.Tensor} object gets a reference that is never dropped
 * ({@link JavaTensorType#keepAllAlive()}), so that nothing Python frees later calls into Java.
 */
public final class HostDetachSteps {
    private static boolean registered;

    private HostDetachSteps() {}

    /** Registers the steps with {@link HostedJvmExit#onDetach}, once per process. */
    public static synchronized void register() {
        if (!registered) {
            registered = true;
            HostedJvmExit.onDetach("exports", Dlpack::abandonLiveExports);
            HostedJvmExit.onDetach("tensors", JavaTensorType::keepAllAlive);
        }
    }
}
