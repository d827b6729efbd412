package io.github.dlpack4j.python.archfixture.api;

/** An interpreter type of the fixture's API (as {@code PyObject} is of the real one). */
public final class Handle {
    private Handle() {}
}
