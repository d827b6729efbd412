package io.github.dlpack4j.model;

/**
 * A call of a {@link PythonModel} passed its deadline ({@link PythonModel.Builder#timeout}), while
 * it waited in the queue or while its model call ran; the message says which.
 */
public class ModelTimeoutException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * A deadline passed.
     *
     * @param message names the model, the deadline and where the call was when it passed
     */
    public ModelTimeoutException(String message) {
        super(message);
    }
}
