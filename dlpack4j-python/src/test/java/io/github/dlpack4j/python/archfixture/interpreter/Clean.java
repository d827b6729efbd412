package io.github.dlpack4j.python.archfixture.interpreter;

import io.github.dlpack4j.python.archfixture.api.Handle;

/** Breaks no rule: it uses the JDK and the API's interpreter type only. */
public final class Clean {
    private Clean() {}

    /** @param h a handle @return its string */
    public static String describe(Handle h) {
        return String.valueOf(h);
    }
}
