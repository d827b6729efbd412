package io.github.dlpack4j.python.archfixture.protocol;

/** A class of the fixture's protocol package. */
public final class Capsule {
    private Capsule() {}

    /** @return nothing */
    public static Capsule none() {
        return null;
    }
}
