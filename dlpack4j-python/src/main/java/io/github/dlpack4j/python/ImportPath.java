package io.github.dlpack4j.python;

/** The route an {@link ImportRequest} took, in the order they are tried. */
public enum ImportPath {
    /** The object was a {@code dltensor} / {@code dltensor_versioned} capsule already. */
    CAPSULE,
    /** The producer type's DLPack C Exchange API ({@code __dlpack_c_exchange_api__}). */
    EXCHANGE_API,
    /** {@code __dlpack__(stream=..., max_version=(1, 3), dl_device=..., copy=...)}. */
    DLPACK,
    /** A legacy {@code __dlpack__} that refused those keywords, called again without them. */
    DLPACK_LEGACY_RETRY
}
