package io.github.dlpack4j.model;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import io.github.dlpack4j.python.PyObject;

/**
 * A text or value output, converted from Python to Java while the GIL is held: a text output is a
 * list (or tuple) of {@code str}, a value output a list (or tuple) of JSON-like values, one item a
 * row. Values convert as dict → {@code Map<String, Object>} (in order, keys {@code str}), list and
 * tuple → {@code List<Object>}, str → {@code String}, int → {@code Long}, float → {@code Double},
 * bool → {@code Boolean}, None → {@code null}; anything else (bytes, an int beyond 64 bits, a NumPy
 * scalar, a tensor) fails the call with an {@link IllegalStateException} naming the output, the
 * row and the Python type.
 */
final class Values {
    private Values() {
    }

    /** {@return the output's strings, one a row, unmodifiable} */
    static List<String> texts(String model, String output, PyObject value) {
        List<Object> rows = rows(model, output, "text", value);
        List<String> texts = new ArrayList<>(rows.size());
        for (int i = 0; i < rows.size(); i++) {
            if (!(rows.get(i) instanceof String s)) {
                String type = pythonType(rows.get(i));
                closeAll(rows);
                throw new IllegalStateException("model " + model + ": text output " + output + ": row " + i
                        + " is a Python " + type + "; a text output is a list of str, one a row");
            }
            texts.add(s);
        }
        return Collections.unmodifiableList(texts);
    }

    /** {@return the output's values, one a row, the outer list unmodifiable} */
    static List<Object> values(String model, String output, PyObject value) {
        List<Object> rows = rows(model, output, "value", value);
        for (int i = 0; i < rows.size(); i++) {
            String bad = check(rows.get(i), "");
            if (bad != null) {
                closeAll(rows);
                throw new IllegalStateException("model " + model + ": value output " + output + ": row " + i
                        + bad + "; a value is a dict with str keys, list, tuple, str, int (64 bits), float, bool "
                        + "or None (NumPy's: .tolist() or .item())");
            }
        }
        return Collections.unmodifiableList(rows);
    }

    /** {@return a stream item's text output: one str} */
    static String text(String model, String output, PyObject value) {
        Object java = value.toJava();
        if (java instanceof String s) {
            return s;
        }
        String type = pythonType(java);
        closeAll(java);
        throw new IllegalStateException("model " + model + ": text output " + output + " of a stream's item is a Python "
                + type + "; a text output's item is a str");
    }

    /** {@return a stream item's value output (converted by {@code toJava}) as one row: a list of the one JSON-like value} */
    static List<Object> one(String model, String output, Object java) {
        String bad = check(java, "");
        if (bad != null) {
            closeAll(java);
            throw new IllegalStateException("model " + model + ": value output " + output + " of a stream's item" + bad
                    + "; a value is a dict with str keys, list, tuple, str, int (64 bits), float, bool or None");
        }
        return Collections.singletonList(java);
    }

    /** The output as a Java list, or an error naming its Python type. */
    @SuppressWarnings("unchecked")
    private static List<Object> rows(String model, String output, String kind, PyObject value) {
        Object java = value.toJava();
        if (java instanceof List<?> list) {
            return (List<Object>) list;
        }
        String type = pythonType(java);
        closeAll(java);
        throw new IllegalStateException("model " + model + ": " + kind + " output " + output + " is a Python " + type
                + "; a " + kind + " output is a list (one item a row)");
    }

    /** {@return null if {@code v} is a JSON-like value, else where and what it is} */
    private static String check(Object v, String path) {
        return switch (v) {
            case null -> null;
            case String _ -> null;
            case Long _ -> null;
            case Double _ -> null;
            case Boolean _ -> null;
            case List<?> list -> {
                for (int i = 0; i < list.size(); i++) {
                    String bad = check(list.get(i), path + "[" + i + "]");
                    if (bad != null) {
                        yield bad;
                    }
                }
                yield null;
            }
            case Map<?, ?> map -> {
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    if (!(e.getKey() instanceof String key)) {
                        yield (path.isEmpty() ? "" : " at " + path) + " has a key that is a Python "
                                + pythonType(e.getKey());
                    }
                    String bad = check(e.getValue(), path + "[" + quote(key) + "]");
                    if (bad != null) {
                        yield bad;
                    }
                }
                yield null;
            }
            default -> (path.isEmpty() ? "" : " at " + path) + " is a Python " + pythonType(v)
                    + (v instanceof BigInteger ? " beyond 64 bits" : "");
        };
    }

    private static String quote(String key) {
        return "\"" + key.replace("\"", "\\\"") + "\"";
    }

    /** {@return the Python type a converted value came from} */
    private static String pythonType(Object v) {
        return switch (v) {
            case null -> "None";
            case String _ -> "str";
            case Long _ -> "int";
            case BigInteger _ -> "int";
            case Double _ -> "float";
            case Boolean _ -> "bool";
            case byte[] _ -> "bytes";
            case List<?> _ -> "list";
            case Map<?, ?> _ -> "dict";
            case PyObject p -> typeName(p);
            default -> v.getClass().getName();
        };
    }

    private static String typeName(PyObject p) {
        try (PyObject type = p.attr("__class__");
             PyObject module = type.attr("__module__");
             PyObject name = type.attr("__qualname__")) {
            String m = module.str();
            return "builtins".equals(m) ? name.str() : m + "." + name.str();
        }
    }

    /** Closes the Python objects that a conversion left in {@code v} (objects of no Java type). */
    private static void closeAll(Object v) {
        switch (v) {
            case PyObject p -> p.close();
            case List<?> list -> list.forEach(Values::closeAll);
            case Map<?, ?> map -> map.forEach((k, x) -> {
                closeAll(k);
                closeAll(x);
            });
            case null, default -> {
            }
        }
    }

    /** A copy of rows {@code from} to {@code from + rows} of a text or value output, unmodifiable (null items kept). */
    static <T> List<T> rows(List<T> all, long from, long rows) {
        return Collections.unmodifiableList(new ArrayList<>(all.subList((int) from, (int) (from + rows))));
    }
}
