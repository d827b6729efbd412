package io.github.dlpack4j.spring;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

import io.github.dlpack4j.model.ModelListener;

/**
 * The listener a model is built with, passing on to the listeners added later (the meters of each
 * registry that binds them), or to none.
 */
final class ModelListenerRelay implements ModelListener {
    private final List<ModelListener> to = new CopyOnWriteArrayList<>();

    void add(ModelListener listener) {
        to.add(listener);
    }

    private void tell(Consumer<ModelListener> what) {
        for (ModelListener l : to) {
            what.accept(l);
        }
    }

    @Override
    public void waited(long nanos) {
        tell(l -> l.waited(nanos));
    }

    @Override
    public void ran(long rows, long nanos) {
        tell(l -> l.ran(rows, nanos));
    }

    @Override
    public void answered() {
        tell(ModelListener::answered);
    }

    @Override
    public void failed() {
        tell(ModelListener::failed);
    }

    @Override
    public void rejected() {
        tell(ModelListener::rejected);
    }

    @Override
    public void timedOut() {
        tell(ModelListener::timedOut);
    }
}
