package io.github.dlpack4j.python.archfixture.interpreter;

import io.github.dlpack4j.python.archfixture.api.ImportThing;

/** Violates "the interpreter uses none of the API's protocol types". */
public final class KnowsImportThing {
    private KnowsImportThing() {}

    /** @return the API's protocol type */
    public static Object use() {
        return ImportThing.none();
    }
}
