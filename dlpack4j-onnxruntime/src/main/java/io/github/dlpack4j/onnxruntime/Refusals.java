package io.github.dlpack4j.onnxruntime;

import ai.onnxruntime.OrtException;

/** ORT's own exceptions with what dlpack4j knows added in front: the code and ORT's message kept. */
final class Refusals {
    private Refusals() {}

    /** {@return an exception saying {@code context}, then ORT's message, with {@code e} as its cause} */
    static OrtException withContext(OrtException e, String context) {
        OrtException ours = new OrtException(e.getCode(), context + ". ORT said: " + e.getMessage());
        ours.initCause(e);
        return ours;
    }
}
