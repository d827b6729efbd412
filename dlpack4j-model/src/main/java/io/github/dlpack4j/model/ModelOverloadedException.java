package io.github.dlpack4j.model;

/**
 * A {@link PythonModel} refused a call because its queue held {@link PythonModel.Builder#maxQueue}
 * requests already: thrown at once, the caller is never blocked waiting for room. Retry later, or
 * answer the client with "too many requests".
 */
public class ModelOverloadedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * An overload refusal.
     *
     * @param message names the model and its queue's size
     */
    public ModelOverloadedException(String message) {
        super(message);
    }
}
