package example.serve.protocol;

/** A request the service answers with a v2 error body ({@code {"error": "..."}}) and this status. */
final class ProtocolException extends RuntimeException {
    private final int status;

    ProtocolException(int status, String message) {
        super(message, null, false, false);
        this.status = status;
    }

    /** {@return a 400 Bad Request with {@code message}} */
    static ProtocolException badRequest(String message) {
        return new ProtocolException(400, message);
    }

    /** {@return the HTTP status of the answer} */
    int status() {
        return status;
    }
}
