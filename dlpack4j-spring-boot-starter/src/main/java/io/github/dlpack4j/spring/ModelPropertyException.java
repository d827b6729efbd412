package io.github.dlpack4j.spring;

/**
 * A {@code dlpack4j.*} property that cannot make its model: it names the property, its value, what
 * is wrong and the fix. {@link ModelPropertyFailureAnalyzer} turns it into Spring Boot's start-up
 * failure report.
 */
public final class ModelPropertyException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The property's full name. */
    private final String property;
    private final transient Object value;
    /** What is wrong with it. */
    private final String problem;
    /** The fix, a sentence naming the property. */
    private final String fix;

    /**
     * Makes the exception.
     *
     * @param property the property's full name, e.g. {@code dlpack4j.models.mlp.inputs[0].dtype}
     * @param value    its value, or {@code null} when it is missing
     * @param problem  what is wrong with it
     * @param fix      the fix, a sentence naming the property
     */
    public ModelPropertyException(String property, Object value, String problem, String fix) {
        super(property + (value == null ? "" : " = " + value) + ": " + problem);
        this.property = property;
        this.value = value;
        this.problem = problem;
        this.fix = fix;
    }

    /** {@return the property's full name} */
    public String property() {
        return property;
    }

    /** {@return the property's value, or {@code null} when it is missing} */
    public Object value() {
        return value;
    }

    /** {@return what is wrong with the property} */
    public String problem() {
        return problem;
    }

    /** {@return the fix, a sentence naming the property} */
    public String fix() {
        return fix;
    }
}
