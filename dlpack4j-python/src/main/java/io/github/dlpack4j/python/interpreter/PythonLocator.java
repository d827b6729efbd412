package io.github.dlpack4j.python.interpreter;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Finds the Python to embed and asks that executable what it would see: its shared library, its
 * prefixes and its {@code sys.path}, so that the embedded interpreter sees a venv's packages too.
 */
record PythonLocator(String executable, int major, int minor, String prefix, String execPrefix, String basePrefix,
                     List<String> path, Path library) {
    /** The system property naming the Python executable. */
    static final String PROPERTY = "dlpack4j.python";
    /** The environment variable naming the Python executable. */
    static final String ENV = "DLPACK4J_PYTHON";
    /**
     * The oldest CPython 3 minor version dlpack4j embeds or attaches to. 3.9 lacks what the exported
     * type needs ({@code Py_TPFLAGS_DISALLOW_INSTANTIATION}), and every version from this one on is
     * tested ({@code scripts/test} runs the {@code any-cpython} tests on each).
     */
    static final int OLDEST_MINOR = 10;

    private static final String QUERY = String.join("\n",
            "import sys, sysconfig, os",
            "v = sysconfig.get_config_var",
            "print('version=%d.%d' % sys.version_info[:2])",
            "print('executable=' + sys.executable)",
            "print('prefix=' + sys.prefix)",
            "print('exec_prefix=' + sys.exec_prefix)",
            "print('base_prefix=' + sys.base_prefix)",
            "print('shared=' + str(bool(v('Py_ENABLE_SHARED'))))",
            "print('gil_disabled=' + str(bool(v('Py_GIL_DISABLED'))))",
            "for k in ('LIBDIR', 'INSTSONAME', 'LDLIBRARY', 'MULTIARCH'): print(k + '=' + str(v(k) or ''))",
            "for p in sys.path: print('path=' + p)");

    /** The executable from {@code -Ddlpack4j.python}, else {@code DLPACK4J_PYTHON}, else {@code python3}. */
    static String configuredExecutable() {
        String p = System.getProperty(PROPERTY);
        if (p == null || p.isBlank()) {
            p = System.getenv(ENV);
        }
        return p == null || p.isBlank() ? "python3" : p;
    }

    /**
     * Runs {@code executable} once to learn its configuration.
     *
     * @throws IllegalStateException naming the fix when the executable is missing, too old, or has
     *                               no shared library
     */
    static PythonLocator locate(String executable) {
        Map<String, String> kv = new LinkedHashMap<>();
        List<String> path = new ArrayList<>();
        String output;
        try {
            Process p = new ProcessBuilder(executable, "-c", QUERY).redirectErrorStream(true).start();
            try (InputStream in = p.getInputStream()) {
                output = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("the Python executable '" + executable + "' failed to report its "
                        + "configuration (is it Python 3." + OLDEST_MINOR + " or newer?): " + output.strip());
            }
        } catch (IOException e) {
            throw new IllegalStateException("no Python executable '" + executable + "': " + e.getMessage()
                    + ". Point -D" + PROPERTY + " or " + ENV + " at a Python 3." + OLDEST_MINOR
                    + "+ executable, e.g. .venv/bin/python", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while asking " + executable + " for its configuration", e);
        }
        for (String line : output.split("\n")) {
            int eq = line.indexOf('=');
            if (eq < 0) {
                continue;
            }
            String key = line.substring(0, eq);
            String value = line.substring(eq + 1);
            if (key.equals("path")) {
                path.add(value);
            } else {
                kv.put(key, value);
            }
        }
        String[] version = kv.getOrDefault("version", "0.0").split("\\.");
        int major = Integer.parseInt(version[0]);
        int minor = Integer.parseInt(version[1]);
        checkVersion(major, minor, executable);
        if (kv.getOrDefault("gil_disabled", "False").equals("True")) {
            throw FreeThreadedRefusal.ofExecutable(executable, major, minor); // before its library is loaded
        }
        Path library = findLibrary(kv);
        if (library == null) {
            throw new IllegalStateException("Python at " + executable + " was built without a shared libpython ("
                    + "Py_ENABLE_SHARED=" + kv.get("shared") + ", LDLIBRARY=" + kv.get("LDLIBRARY") + "), which "
                    + "embedding needs: use a Python built with --enable-shared (pyenv: PYTHON_CONFIGURE_OPTS="
                    + "--enable-shared) or Debian's libpython" + major + "." + minor);
        }
        return new PythonLocator(kv.get("executable"), major, minor, kv.get("prefix"), kv.get("exec_prefix"),
                kv.get("base_prefix"), List.copyOf(path), library);
    }

    /** Refuses a Python older than 3.{@value #OLDEST_MINOR}; {@code where} names it in the message. */
    static void checkVersion(int major, int minor, String where) {
        if (major != 3 || minor < OLDEST_MINOR) {
            throw new IllegalStateException("Python " + major + "." + minor + " at " + where
                    + " is too old: dlpack4j needs Python 3." + OLDEST_MINOR + " or newer");
        }
    }

    private static Path findLibrary(Map<String, String> kv) {
        String libdir = kv.getOrDefault("LIBDIR", "");
        String multiarch = kv.getOrDefault("MULTIARCH", "");
        for (String name : new String[] {kv.get("INSTSONAME"), kv.get("LDLIBRARY")}) {
            if (name == null || name.isEmpty() || !name.contains(".so")) {
                continue;
            }
            for (Path candidate : new Path[] {Path.of(libdir, name), Path.of(libdir, multiarch, name)}) {
                if (Files.isRegularFile(candidate)) {
                    return candidate;
                }
            }
        }
        return null;
    }
}
