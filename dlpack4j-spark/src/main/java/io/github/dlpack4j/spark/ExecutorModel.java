package io.github.dlpack4j.spark;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;

import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;

/**
 * The description of a model that travels to the executors inside the job: each executor loads it
 * into its embedded Python, once per executor JVM, as a model of dlpack4j-model's runtime
 * ({@link PythonModel}, whose calling convention it follows): a Python callable that takes a
 * batch's input tensors, in the order {@link BatchInference} declares them, as DLPack objects
 * ({@code torch.from_dlpack(x)} views one without a copy), and returns the output tensors: one
 * DLPack producer (a torch tensor, a NumPy array), a tuple or list of them in the declared order,
 * or a dict of them by output name.
 *
 * <p>An {@code ExecutorModel} holds no Python object and loads nothing on the driver; what makes
 * the model must be serializable: Python source code ({@link #fromSource}), or a {@link Loader}, a
 * serializable Java function. Each executor then builds the runtime's {@link PythonModel} from it
 * ({@link ExecutorPython}) and runs every batch through that.
 *
 * {@snippet :
 * ExecutorModel mlp = ExecutorModel.fromSource("mlp", source, "load", "/data/mlp.pt");
 * BatchInference scoring = BatchInference.builder().input("features", 256).passThrough("id")
 *         .model(mlp).output("scores", DataTypes.FloatType, 16).build();
 * }
 */
public final class ExecutorModel implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Makes the model's Python callable, in an executor; serializable, as it travels with the job. */
    @FunctionalInterface
    public interface Loader extends Serializable {
        /**
         * Makes the callable.
         *
         * @param python the executor's interpreter
         * @return the model: a Python callable, owned by the executor from now on
         */
        PyObject load(Python python);
    }

    /** The model's name. */
    private final String name;
    /** What an executor's cache knows the model by. */
    private final String key;
    /** Makes the model's callable: a Java function, or null for source. */
    private final Loader loader;
    /** The source of {@link #fromSource}, or null for a loader. */
    private final Source source;

    private ExecutorModel(String name, String key, Loader loader, Source source) {
        this.name = name;
        this.key = key;
        this.loader = loader;
        this.source = source;
    }

    /**
     * A model made by a Java function. Executors load it once per {@code name}: give another model
     * another name.
     *
     * @param name   the model's name, unique per model within an application
     * @param loader makes the callable
     * @return the model
     */
    public static ExecutorModel of(String name, Loader loader) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(loader, "loader");
        return new ExecutorModel(name, name, loader, null);
    }

    /**
     * A model made by Python source: {@code source} runs as a module of its own (its tracebacks show
     * its lines, under the file name {@code <model NAME>}), then {@code factory(*args)} makes the
     * callable. Executors load it once per name, source, factory and arguments.
     *
     * @param name    the model's name
     * @param source  Python code that defines {@code factory}
     * @param factory the function of {@code source} that returns the model's callable
     * @param args    its arguments: strings, numbers, booleans, lists and maps of them (as Python's)
     * @return the model
     * @throws IllegalArgumentException if an argument is not serializable
     */
    public static ExecutorModel fromSource(String name, String source, String factory, Object... args) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(factory, "factory");
        List<Object> arguments = new ArrayList<>(Arrays.asList(args));
        for (Object a : arguments) {
            if (a != null && !(a instanceof Serializable)) {
                throw new IllegalArgumentException("model " + name + ": argument " + a + " of "
                        + a.getClass().getName() + " is not serializable; pass strings, numbers, lists or maps");
            }
        }
        String key = name + "@" + digest(source + '\0' + factory + '\0' + arguments);
        return new ExecutorModel(name, key, null, new Source(source, factory, arguments));
    }

    private static String digest(String text) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(d, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError("every JDK has SHA-256", e);
        }
    }

    /** {@return the model's name} */
    public String name() {
        return name;
    }

    /** What an executor's cache knows the model by. */
    String key() {
        return key;
    }

    /**
     * Builds the runtime's model from this description, in an executor: the callable made by the
     * loader, or by dlpack4j-model's loading of source, wrapped in {@code Timed} ({@link PythonHelpers}).
     *
     * @param builder the runtime's settings, all but the source
     * @param python  the executor's interpreter, the builder's
     * @return the runtime's model, loaded
     */
    PythonModel build(PythonModel.Builder builder, Python python) {
        PythonHelpers helpers = PythonHelpers.of(python);
        if (source != null) {
            return builder.factory(PythonHelpers.MODULE, "source", name, source.code(), source.factory(), source.args())
                    .build();
        }
        try (PyObject model = loader.load(python)) {
            if (model == null) {
                throw new IllegalStateException("model " + name + ": the loader returned no Python object");
            }
            helpers.put(key, model);
        }
        try {
            return builder.factory(PythonHelpers.MODULE, "made", key).build();
        } finally {
            helpers.discard(key);
        }
    }

    @Override
    public String toString() {
        return "ExecutorModel[" + key + "]";
    }

    /**
     * The Python of {@link #fromSource}.
     *
     * @param code    its Python source
     * @param factory the function of the source that makes the callable
     * @param args    the factory's arguments
     */
    private record Source(String code, String factory, List<Object> args) implements Serializable {
    }
}
