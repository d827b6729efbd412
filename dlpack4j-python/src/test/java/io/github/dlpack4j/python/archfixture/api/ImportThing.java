package io.github.dlpack4j.python.archfixture.api;

/** A protocol type of the fixture's API (as {@code ImportRequest} is of the real one). */
public final class ImportThing {
    private ImportThing() {}

    /** @return nothing */
    public static ImportThing none() {
        return null;
    }
}
