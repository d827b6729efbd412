package io.github.dlpack4j.model;

import java.nio.file.Path;
import java.util.List;

/** Where a {@link PythonModel}'s callable comes from: one of the builder's four sources. */
sealed interface ModelSource {
    /** Whether the callable takes torch tensors (made by {@code torch.from_dlpack}) rather than DLPack objects. */
    boolean torchInputs();

    /** {@return the name a model from this source gets when the builder names none} */
    String defaultName();

    /** {@code torch.jit.load(file, map_location="cpu")}, in eval mode. */
    record TorchScript(Path file) implements ModelSource {
        @Override
        public boolean torchInputs() {
            return true;
        }

        @Override
        public String defaultName() {
            return stem(file);
        }
    }

    /** {@code torch.export.load(file).module()}. */
    record ExportedProgram(Path file) implements ModelSource {
        @Override
        public boolean torchInputs() {
            return true;
        }

        @Override
        public String defaultName() {
            return stem(file);
        }
    }

    /** {@code module.function(*args)} returns the callable. */
    record Factory(String module, String function, List<Object> args) implements ModelSource {
        @Override
        public boolean torchInputs() {
            return false;
        }

        @Override
        public String defaultName() {
            return module + "." + function;
        }
    }

    /** {@code code} runs as a module of its own, then its {@code function(*args)} returns the callable. */
    record Source(String code, String function, List<Object> args) implements ModelSource {
        @Override
        public boolean torchInputs() {
            return false;
        }

        @Override
        public String defaultName() {
            return function;
        }
    }

    private static String stem(Path file) {
        String n = file.getFileName().toString();
        int dot = n.lastIndexOf('.');
        return dot > 0 ? n.substring(0, dot) : n;
    }
}
