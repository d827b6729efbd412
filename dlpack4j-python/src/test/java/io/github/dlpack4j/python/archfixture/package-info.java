/**
 * Deliberate violations of the architecture rules, in packages of their own shaped like the
 * module's ({@code api}, {@code interpreter}, {@code protocol}), so that {@code ArchitectureTest}
 * shows each rule failing on them. Never part of the code base.
 */
package io.github.dlpack4j.python.archfixture;
