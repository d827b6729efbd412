package io.github.dlpack4j.spring;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.python.Python;

import org.springframework.core.io.FileSystemResource;
import org.springframework.core.io.Resource;
import org.springframework.core.io.ResourceLoader;

/**
 * Builds the {@link PythonModel} of one {@code dlpack4j.models.<name>} entry, checking each property
 * first: a bad one is a {@link ModelPropertyException} naming it and the fix.
 */
final class PythonModelFactory {
    static final String PREFIX = "dlpack4j.models.";
    /** The dtypes by their NumPy-style names ({@link DataType#toString()}). */
    private static final Map<String, DataType> DTYPES = dtypes();

    private final Python python;
    private final ResourceLoader resources;
    private final Map<String, Dlpack4jProperties.Model> models;
    private final Map<String, ModelListenerRelay> relays = new ConcurrentHashMap<>();

    PythonModelFactory(Python python, ResourceLoader resources, Dlpack4jProperties properties) {
        this.python = python;
        this.resources = resources;
        this.models = properties.models();
    }

    private static Map<String, DataType> dtypes() {
        Map<String, DataType> byName = new TreeMap<>();
        for (Field f : DataType.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == DataType.class) {
                try {
                    DataType d = (DataType) f.get(null);
                    byName.put(d.toString(), d);
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        return byName;
    }

    /** {@return the relay of the model {@code name}'s listener: the meters attach to it once bound} */
    ModelListenerRelay relay(String name) {
        return relays.computeIfAbsent(name, n -> new ModelListenerRelay());
    }

    /**
     * Checks the entry's properties and builds its model, named after the entry.
     *
     * @param name the entry's name, the bean's
     * @return the model, loaded and warmed up
     */
    PythonModel create(String name) {
        Dlpack4jProperties.Model m = Objects.requireNonNull(models.get(name), name);
        String at = PREFIX + name + ".";
        PythonModel.Builder b = PythonModel.builder().name(name).python(python).listener(relay(name));
        source(b, at, m);
        if (m.torchInputs()) {
            b.torchInputs();
        }
        specs(at + "inputs", m.inputs(), b::input);
        specs(at + "outputs", m.outputs(), b::output);
        if (m.batching().maxRows() != null) {
            if (m.batching().maxRows() < 1) {
                throw new ModelPropertyException(at + "batching.max-rows", m.batching().maxRows(),
                        "a batch has at least 1 row", "Set " + at + "batching.max-rows to 1 or more, or remove it to turn batching off.");
            }
            if (m.batching().maxDelay().isNegative()) {
                throw new ModelPropertyException(at + "batching.max-delay", m.batching().maxDelay(),
                        "a delay is zero or more", "Set " + at + "batching.max-delay to 0ms or more, e.g. 2ms.");
            }
            b.batching(m.batching().maxRows(), m.batching().maxDelay());
        }
        if (m.workers() != null) {
            atLeastOne(at + "workers", m.workers());
            b.workers(m.workers());
        }
        if (m.maxQueue() != null) {
            atLeastOne(at + "max-queue", m.maxQueue());
            b.maxQueue(m.maxQueue());
        }
        if (m.timeout() != null) {
            if (m.timeout().isNegative() || m.timeout().isZero()) {
                throw new ModelPropertyException(at + "timeout", m.timeout(), "a deadline is more than zero",
                        "Set " + at + "timeout to more than zero, e.g. 500ms, or remove it for no deadline.");
            }
            b.timeout(m.timeout());
        }
        return b.build();
    }

    private static void atLeastOne(String property, int value) {
        if (value < 1) {
            throw new ModelPropertyException(property, value, "at least 1", "Set " + property + " to 1 or more.");
        }
    }

    private void source(PythonModel.Builder b, String at, Dlpack4jProperties.Model m) {
        List<String> given = new ArrayList<>();
        if (m.torchscript() != null) {
            given.add(at + "torchscript");
        }
        if (m.exportedProgram() != null) {
            given.add(at + "exported-program");
        }
        if (m.factory() != null) {
            given.add(at + "factory");
        }
        String sources = at + "torchscript, " + at + "exported-program or " + at + "factory";
        if (given.isEmpty()) {
            throw new ModelPropertyException(at + "torchscript", null, "the model has no source",
                    "Set one of " + sources + ".");
        }
        if (given.size() > 1) {
            throw new ModelPropertyException(given.get(1), String.join(", ", given), "the model has two sources",
                    "Keep one of " + String.join(" and ", given) + ".");
        }
        if (m.torchscript() != null) {
            b.torchScript(file(at + "torchscript", m.torchscript()));
        } else if (m.exportedProgram() != null) {
            b.exportedProgram(file(at + "exported-program", m.exportedProgram()));
        } else {
            int colon = m.factory().indexOf(':');
            if (colon < 1 || colon == m.factory().length() - 1 || m.factory().indexOf(':', colon + 1) >= 0) {
                throw new ModelPropertyException(at + "factory", m.factory(), "not module:function",
                        "Set " + at + "factory to a module and its function, e.g. my_models:make_mlp.");
            }
            b.factory(m.factory().substring(0, colon), m.factory().substring(colon + 1), m.args().toArray());
        }
    }

    /** {@return the file at {@code location}: a path, or a {@code classpath:} resource (copied to a temp file when inside a jar)} */
    private Path file(String property, String location) {
        // A plain path is a file, relative to the working directory (a context's getResource reads it from the class path).
        Resource r = location.startsWith(ResourceLoader.CLASSPATH_URL_PREFIX) || location.startsWith("file:")
                ? resources.getResource(location) : new FileSystemResource(location);
        if (!r.exists()) {
            throw new ModelPropertyException(property, location, "no such file",
                    "Set " + property + " to an existing file (a path, or classpath:name for a resource).");
        }
        try {
            if (r.isFile()) {
                return r.getFile().toPath();
            }
            String fileName = Objects.requireNonNullElse(r.getFilename(), "model");
            Path dir = Files.createTempDirectory("dlpack4j-model");
            Path copy = dir.resolve(fileName);
            try (InputStream in = r.getInputStream()) {
                Files.copy(in, copy, StandardCopyOption.REPLACE_EXISTING);
            }
            copy.toFile().deleteOnExit();
            dir.toFile().deleteOnExit();
            return copy;
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + property + " = " + location, e);
        }
    }

    /** Declares each input or output; {@code declare} is the builder's input or output. */
    private static void specs(String property, List<Dlpack4jProperties.Spec> specs, Declare declare) {
        for (int i = 0; i < specs.size(); i++) {
            Dlpack4jProperties.Spec s = specs.get(i);
            String at = property + "[" + i + "].";
            if (s.name() == null || s.name().isBlank()) {
                throw new ModelPropertyException(at + "name", null, "every input and output has a name",
                        "Set " + at + "name to the name the model's callers use.");
            }
            DataType dtype = s.dtype() == null ? null : DTYPES.get(s.dtype().trim().toLowerCase(Locale.ROOT));
            if (dtype == null) {
                throw new ModelPropertyException(at + "dtype", s.dtype(), s.dtype() == null ? "every input and output has a dtype" : "not a dtype",
                        "Set " + at + "dtype to one of " + String.join(", ", DTYPES.keySet()) + ".");
            }
            long[] shape = s.shape().stream().mapToLong(Long::longValue).toArray();
            for (int d = 0; d < shape.length; d++) {
                if (shape[d] < -1) {
                    throw new ModelPropertyException(at + "shape[" + d + "]", shape[d], "an extent is -1 (any) or at least 0",
                            "Set " + at + "shape[" + d + "] to -1 for any extent, or to the extent itself.");
                }
            }
            declare.declare(s.name(), dtype, shape);
        }
    }

    /** {@link PythonModel.Builder#input} or {@link PythonModel.Builder#output}. */
    @FunctionalInterface
    private interface Declare {
        void declare(String name, DataType dtype, long... shape);
    }
}
