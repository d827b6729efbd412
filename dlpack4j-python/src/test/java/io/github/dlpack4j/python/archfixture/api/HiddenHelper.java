package io.github.dlpack4j.python.archfixture.api;

/** Violates "the API package holds public types only": a package-private class in it. */
final class HiddenHelper {
    private HiddenHelper() {}
}
