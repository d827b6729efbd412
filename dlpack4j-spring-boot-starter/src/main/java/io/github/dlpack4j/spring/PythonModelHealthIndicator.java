package io.github.dlpack4j.spring;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The {@code dlpack4j} health: UP when the interpreter runs Python and every model is ready (built
 * and not closed), with each model's state and queue depth in the details; DOWN with the reason
 * otherwise.
 */
public final class PythonModelHealthIndicator implements HealthIndicator {
    private final Python python;
    private final Map<String, PythonModel> models;

    /**
     * Makes the indicator.
     *
     * @param python the process's interpreter
     * @param models the models by bean name
     */
    public PythonModelHealthIndicator(Python python, Map<String, PythonModel> models) {
        this.python = python;
        this.models = Map.copyOf(models);
    }

    @Override
    public Health health() {
        Map<String, Object> details = new LinkedHashMap<>();
        String down = null;
        for (Map.Entry<String, PythonModel> e : new TreeMap<>(models).entrySet()) {
            PythonModel m = e.getValue();
            details.put(e.getKey(), Map.of("state", m.isClosed() ? "closed" : "ready", "queued", m.queued()));
            if (m.isClosed() && down == null) {
                down = "model " + e.getKey() + " is closed";
            }
        }
        try (PyObject two = python.eval("1 + 1")) {
            if (two.asLong() != 2) {
                down = "the interpreter answered 1 + 1 = " + two.asLong();
            }
        } catch (RuntimeException e) {
            return Health.down(e).withDetail("reason", "the interpreter does not run: " + e.getMessage())
                    .withDetails(details).build();
        }
        return (down == null ? Health.up() : Health.down().withDetail("reason", down)).withDetails(details).build();
    }
}
