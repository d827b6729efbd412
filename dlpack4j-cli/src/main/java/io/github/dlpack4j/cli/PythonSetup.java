package io.github.dlpack4j.cli;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The Python the command embeds and the setting that chose it, in the order {@link Python#start()}
 * reads them: {@code --python} (doctor), {@code -Ddlpack4j.python}, {@code DLPACK4J_PYTHON}, else
 * {@code python3} on the PATH.
 *
 * @param executable the Python executable as given (for PATH: where it was found, if it was)
 * @param chosenBy   the option, property, variable or PATH that chose it
 */
record PythonSetup(String executable, String chosenBy) {
    static final String PROPERTY = "dlpack4j.python";
    static final String VARIABLE = "DLPACK4J_PYTHON";

    /** How to point the command at a Python with numpy, torch and jax: the text demo and doctor print. */
    static final String HOW_TO = "point " + VARIABLE + " (or -D" + PROPERTY + ", or doctor's --python) at a "
            + "Python 3.10+ built with a shared libpython that has numpy, torch and jax, e.g. "
            + VARIABLE + "=.venv/bin/python; scripts/demo makes that .venv";

    /** The Python to use; {@code option} (doctor's {@code --python}) wins and becomes the property. */
    static PythonSetup choose(String option) {
        if (option != null) {
            System.setProperty(PROPERTY, option);
            return new PythonSetup(option, "--python");
        }
        String property = System.getProperty(PROPERTY);
        if (property != null && !property.isBlank()) {
            return new PythonSetup(property, "-D" + PROPERTY);
        }
        String variable = System.getenv(VARIABLE);
        if (variable != null && !variable.isBlank()) {
            return new PythonSetup(variable, VARIABLE);
        }
        return new PythonSetup(onPath("python3"), "python3 on the PATH");
    }

    private static String onPath(String name) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, name);
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        return name;
    }

    /**
     * The command's Python helpers ({@code dlpack4j_cli.py}), loaded into the interpreter by the first
     * call; later calls return the module {@code sys.modules} holds without reading or running it again.
     */
    static PyObject helpers(Python py) {
        PyObject loaded = py.eval("__import__('sys').modules.get('dlpack4j_cli')");
        if (!loaded.isNone()) {
            return loaded;
        }
        loaded.close();
        String source;
        try (InputStream in = PythonSetup.class.getResourceAsStream("dlpack4j_cli.py")) {
            source = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try (PyObject load = py.eval("lambda src: __import__('sys').modules.setdefault('dlpack4j_cli', "
                + "(lambda m: (exec(compile(src, 'dlpack4j_cli.py', 'exec'), m.__dict__), m)[1])"
                + "(__import__('types').ModuleType('dlpack4j_cli')))")) {
            return load.call(source);
        }
    }

    /** Whether {@code module} can be imported in the interpreter of {@code helpers}, without importing it. */
    static boolean installed(PyObject helpers, String module) {
        try (PyObject found = helpers.callMethod("installed", module)) {
            return found.asBoolean();
        }
    }
}
