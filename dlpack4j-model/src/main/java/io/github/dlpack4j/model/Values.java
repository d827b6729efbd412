package io.github.dlpack4j.model;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonException;

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
            String bad = check(rows.get(i));
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
    static String text(String model, String output, Object java) {
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
        String bad = check(java);
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
        Object java;
        try {
            java = value.toJava();
        } catch (PythonException | IllegalArgumentException e) {
            // a str that UTF-8 cannot carry (a lone surrogate), a value nested too deep
            throw new IllegalStateException("model " + model + ": " + kind + " output " + output + failingRow(value)
                    + " cannot be converted to Java: " + e.getMessage().lines().findFirst().orElse(""), e);
        }
        if (java instanceof List<?> list) {
            return (List<Object>) list;
        }
        String type = pythonType(java);
        closeAll(java);
        throw new IllegalStateException("model " + model + ": " + kind + " output " + output + " is a Python " + type
                + "; a " + kind + " output is a list (one item a row)");
    }

    /** {@return {@code ": row I"} for the first row of {@code list} that fails to convert, or "" if none does alone} */
    private static String failingRow(PyObject list) {
        try (PyObject size = list.callMethod("__len__")) {
            for (long i = 0, n = size.asLong(); i < n; i++) {
                try (PyObject row = list.get(i)) {
                    closeAll(row.toJava());
                } catch (PythonException | IllegalArgumentException e) {
                    return ": row " + i;
                }
            }
        } catch (PythonException e) {
            // no list: its own conversion failed
        }
        return "";
    }

    /** The most lists and dicts a value may nest in one another (as JSON parsers bound it, Jackson's 1,000). */
    static final int MAX_DEPTH = 1_000;

    /** A list or dict being checked: its items (a map's entries) and the step from its parent, for an error's path. */
    private static final class Open {
        final Open parent;
        final String step;
        final java.util.Iterator<?> items;
        final boolean map;
        int index = -1;

        Open(Open parent, String step, Object container) {
            this.parent = parent;
            this.step = step;
            this.map = container instanceof Map<?, ?>;
            this.items = map ? ((Map<?, ?>) container).entrySet().iterator() : ((List<?>) container).iterator();
        }

        /** {@return where an error at {@code step} below this container is: "" for the row itself, else " at [..][..]"} */
        String at(String step) {
            StringBuilder path = new StringBuilder(step);
            for (Open o = this; o != null; o = o.parent) {
                path.insert(0, o.step);
            }
            return path.isEmpty() ? "" : " at " + path;
        }
    }

    /**
     * {@return null if {@code v} is a JSON-like value, else where and what it is} Without recursion
     * (a value converts from Python at any depth), in the order of the value's items, keys first.
     */
    private static String check(Object v) {
        if (!(v instanceof List<?> || v instanceof Map<?, ?>)) {
            return leaf(v) ? null : " is a Python " + pythonType(v) + (v instanceof BigInteger ? " beyond 64 bits" : "");
        }
        java.util.ArrayDeque<Open> open = new java.util.ArrayDeque<>();
        open.push(new Open(null, "", v));
        while (!open.isEmpty()) {
            Open o = open.peek();
            if (!o.items.hasNext()) {
                open.pop();
                continue;
            }
            Object item;
            String step;
            if (o.map) {
                Map.Entry<?, ?> e = (Map.Entry<?, ?>) o.items.next();
                if (!(e.getKey() instanceof String key)) {
                    return o.at("") + " has a key that is a Python " + pythonType(e.getKey());
                }
                item = e.getValue();
                step = "[" + quote(key) + "]";
            } else {
                item = o.items.next();
                step = "[" + ++o.index + "]";
            }
            if (item instanceof List<?> || item instanceof Map<?, ?>) {
                if (open.size() >= MAX_DEPTH) {
                    return o.at(step) + " is nested more than " + MAX_DEPTH + " lists and dicts deep";
                }
                open.push(new Open(o, step, item));
            } else if (!leaf(item)) {
                return o.at(step) + " is a Python " + pythonType(item) + (item instanceof BigInteger ? " beyond 64 bits" : "");
            }
        }
        return null;
    }

    private static boolean leaf(Object v) {
        return v == null || v instanceof String || v instanceof Long || v instanceof Double || v instanceof Boolean;
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

    /** Closes the Python objects that a conversion left in {@code v} (objects of no Java type), without recursion. */
    static void closeAll(Object v) {
        java.util.ArrayDeque<Object> left = new java.util.ArrayDeque<>();
        if (v != null) {
            left.push(v);
        }
        while (!left.isEmpty()) {
            switch (left.pop()) {
                case PyObject p -> p.close();
                case List<?> list -> list.forEach(x -> {
                    if (x != null) {
                        left.push(x);
                    }
                });
                case Map<?, ?> map -> map.forEach((k, x) -> {
                    if (k != null) {
                        left.push(k);
                    }
                    if (x != null) {
                        left.push(x);
                    }
                });
                default -> {
                }
            }
        }
    }

    /** A copy of rows {@code from} to {@code from + rows} of a text or value output, unmodifiable (null items kept). */
    static <T> List<T> rows(List<T> all, long from, long rows) {
        return Collections.unmodifiableList(new ArrayList<>(all.subList((int) from, (int) (from + rows))));
    }
}
