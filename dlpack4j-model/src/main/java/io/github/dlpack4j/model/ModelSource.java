package io.github.dlpack4j.model;

import java.nio.file.Path;
import java.util.List;

/** Where a {@link PythonModel}'s callable comes from: one of the builder's four sources. */
sealed interface ModelSource {
    /** {@code torch.jit.load(file, map_location="cpu")}, in eval mode. */
    record TorchScript(Path file) implements ModelSource {}

    /** {@code torch.export.load(file).module()}. */
    record ExportedProgram(Path file) implements ModelSource {}

    /** {@code module.function(*args)} returns the callable. */
    record Factory(String module, String function, List<Object> args) implements ModelSource {}

    /** {@code code} runs as a module of its own, then its {@code function(*args)} returns the callable. */
    record Source(String code, String function, List<Object> args) implements ModelSource {}

    /** {@return whether the callable always takes torch tensors rather than dlpack4j's Python tensors} */
    default boolean torchInputs() {
        return this instanceof TorchScript || this instanceof ExportedProgram;
    }

    /** {@return the name a model from this source gets when the builder names none} */
    default String defaultName() {
        return switch (this) {
            case TorchScript(Path file) -> stem(file);
            case ExportedProgram(Path file) -> stem(file);
            case Factory(String module, String function, List<Object> args) -> module + "." + function;
            case Source(String code, String function, List<Object> args) -> function;
        };
    }

    private static String stem(Path file) {
        String n = file.getFileName().toString();
        int dot = n.lastIndexOf('.');
        return dot > 0 ? n.substring(0, dot) : n;
    }
}
