/**
 * ONNX Runtime Java sessions run on dlpack4j tensors: inputs handed to ORT without a copy, outputs
 * returned as tensors over ORT's own memory, and pinned outputs that ORT writes into memory numpy or
 * torch already view. {@link io.github.dlpack4j.onnxruntime.DlpackSession} runs a session;
 * {@link io.github.dlpack4j.onnxruntime.OrtTensors} converts single tensors both ways.
 *
 * <p>On the module path grant native access to {@code io.github.dlpack4j.core} (as for the rest of
 * dlpack4j), to this module (it calls one function of ORT's C API for zero-copy outputs) and to
 * {@code com.microsoft.onnxruntime} (ORT loads its JNI library).
 */
@SuppressWarnings({"requires-transitive-automatic", "requires-automatic"}) // ORT's jar has no module-info
module io.github.dlpack4j.onnxruntime {
    requires transitive io.github.dlpack4j.core;
    requires transitive com.microsoft.onnxruntime;

    exports io.github.dlpack4j.onnxruntime;
}
