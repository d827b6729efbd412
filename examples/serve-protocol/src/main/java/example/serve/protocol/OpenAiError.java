package example.serve.protocol;

import example.serve.protocol.InferenceProtocol.Answer;

/**
 * A request of the OpenAI-style endpoints answered with this status and OpenAI's error object,
 * {@code {"error": {"message", "type", "param", "code"}}}.
 */
final class OpenAiError extends RuntimeException {
    private final int status;
    private final String type;
    private final String param;
    private final String code;

    /**
     * @param status  the HTTP status
     * @param type    the error's {@code type}: {@code invalid_request_error}, {@code rate_limit_error},
     *                {@code server_error}, {@code service_unavailable_error}
     * @param param   the request's parameter at fault, or null
     * @param code    the error's {@code code}, or null
     * @param message what is wrong, for the client
     */
    OpenAiError(int status, String type, String param, String code, String message) {
        super(message, null, false, false);
        this.status = status;
        this.type = type;
        this.param = param;
        this.code = code;
    }

    /** {@return a 400 {@code invalid_request_error} about {@code param} (null: the request as a whole)} */
    static OpenAiError invalid(String param, String message) {
        return new OpenAiError(400, "invalid_request_error", param, null, message);
    }

    /** {@return the HTTP status} */
    int status() {
        return status;
    }

    /** {@return the answer: the status and the error object} */
    Answer answer() {
        return Answer.json(status, "{\"error\":{\"message\":" + InferenceProtocol.quote(getMessage()) + ",\"type\":"
                + InferenceProtocol.quote(type) + ",\"param\":" + orNull(param) + ",\"code\":" + orNull(code) + "}}");
    }

    private static String orNull(String s) {
        return s == null ? "null" : InferenceProtocol.quote(s);
    }
}
