package io.github.dlpack4j;

/**
 * Foreign DLPack data that breaks the standard's rules, or a request that cannot be served.
 *
 * <p>The message names the offending field and its value, for example
 * {@code "dl_tensor.ndim = -3: must be between 0 and 1024"}. When an import fails this way, the
 * producer's deleter has already been called exactly once, so the caller has nothing to clean up.
 */
public class DlpackException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception with the given message.
     *
     * @param message names the offending field or request and its value
     */
    public DlpackException(String message) {
        super(message);
    }

    /**
     * An exception with the given message and cause.
     *
     * @param message names the offending field or request and its value
     * @param cause   the failure that revealed it, e.g. an out-of-bounds read of the struct
     */
    public DlpackException(String message, Throwable cause) {
        super(message, cause);
    }
}
