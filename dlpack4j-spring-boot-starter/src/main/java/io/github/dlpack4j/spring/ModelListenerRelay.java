package io.github.dlpack4j.spring;

import io.github.dlpack4j.model.ModelListener;

/**
 * The listener a model is built with, passing on to the listener set later (the meters, once a
 * registry binds them), or to none.
 */
final class ModelListenerRelay implements ModelListener {
    private static final ModelListener NONE = new ModelListener() {
    };

    private volatile ModelListener to = NONE;

    void relayTo(ModelListener listener) {
        to = listener;
    }

    @Override
    public void waited(long nanos) {
        to.waited(nanos);
    }

    @Override
    public void ran(long rows, long nanos) {
        to.ran(rows, nanos);
    }

    @Override
    public void answered() {
        to.answered();
    }

    @Override
    public void failed() {
        to.failed();
    }

    @Override
    public void rejected() {
        to.rejected();
    }

    @Override
    public void timedOut() {
        to.timedOut();
    }
}
