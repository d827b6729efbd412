package io.github.dlpack4j.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns a {@link ModelPropertyException} into Spring Boot's start-up report: the property, its value
 * and what is wrong, then the fix.
 */
public final class ModelPropertyFailureAnalyzer extends AbstractFailureAnalyzer<ModelPropertyException> {
    /** Makes the analyzer (Spring Boot does, from {@code META-INF/spring.factories}). */
    public ModelPropertyFailureAnalyzer() {
    }

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, ModelPropertyException cause) {
        String description = "The model property " + cause.property()
                + (cause.value() == null ? " is not set" : " is '" + cause.value() + "'") + ": " + cause.problem();
        return new FailureAnalysis(description, cause.fix(), cause);
    }
}
