package io.github.dlpack4j.python.archfixture.interpreter;

import io.github.dlpack4j.python.archfixture.protocol.Capsule;

/** Violates "the interpreter uses no protocol package": it calls a protocol class. */
public final class ReachesIntoProtocol {
    private ReachesIntoProtocol() {}

    /** @return what the protocol class returns */
    public static Object use() {
        return Capsule.none();
    }
}
