package io.github.dlpack4j.python.archfixture.interpreter;

import io.github.dlpack4j.Tensor;

/** Violates "the interpreter knows nothing of DLPack": it uses core's {@code Tensor}. */
public final class KnowsTensors {
    private KnowsTensors() {}

    /** @param t a tensor @return its rank */
    public static int rank(Tensor t) {
        return t.ndim();
    }
}
