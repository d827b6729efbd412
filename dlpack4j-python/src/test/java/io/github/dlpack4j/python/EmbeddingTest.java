package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigInteger;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

class EmbeddingTest {
    static final Python PY = Python.start();

    @Test
    void theInterpreterSeesTheVenvAndItsPackages() {
        assertThat(PY.executable()).endsWith(".venv/bin/python");
        try (PyObject np = PY.importModule("numpy"); PyObject torch = PY.importModule("torch")) {
            assertThat(np.attr("__version__").str()).isEqualTo("2.4.6");
            assertThat(torch.attr("__version__").str()).startsWith("2.13.0");
            assertThat(np.attr("__file__").str()).contains(".venv");
        }
        try (PyObject prefix = PY.eval("__import__('sys').prefix")) {
            assertThat(prefix.str()).endsWith(".venv");
        }
    }

    @Test
    void numpyAndTorchComputeInsideTheEmbeddedInterpreter() {
        try (PyObject np = PY.importModule("numpy"); PyObject a = np.callMethod("arange", 6);
             PyObject s = a.callMethod("sum")) {
            assertThat(s.asLong()).isEqualTo(15);
        }
        PY.exec("import torch\nt = torch.ones(3, 4) * 2\ntotal = float(t.sum())");
        try (PyObject total = PY.getGlobal("total")) {
            assertThat(total.asDouble()).isEqualTo(24.0);
        }
    }

    @Test
    @Tag("any-cpython")
    void javaValuesConvertToPythonAndBack() {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("a", 1L);
        map.put("b", List.of(true, 2.5, "x", new byte[] {1, 2}));
        map.put("c", null);
        try (PyObject o = PY.toPython(map)) {
            assertThat(o.repr()).isEqualTo("{'a': 1, 'b': [True, 2.5, 'x', b'\\x01\\x02'], 'c': None}");
            @SuppressWarnings("unchecked")
            Map<Object, Object> back = (Map<Object, Object>) o.toJava();
            assertThat(back.get("a")).isEqualTo(1L);
            assertThat(back.get("c")).isNull();
            List<?> b = (List<?>) back.get("b");
            assertThat(b.get(0)).isEqualTo(true);
            assertThat(b.get(1)).isEqualTo(2.5);
            assertThat(b.get(2)).isEqualTo("x");
            assertThat((byte[]) b.get(3)).containsExactly(1, 2);
        }
        try (PyObject big = PY.eval("2**100"); PyObject t = PY.eval("(1, 'é', 3.0)")) {
            assertThat(big.toJava()).isEqualTo(BigInteger.TWO.pow(100));
            assertThat(t.toJava()).isEqualTo(List.of(1L, "é", 3.0));
        }
        try (PyObject i = PY.toPython((short) -7); PyObject f = PY.toPython(1.5f)) {
            assertThat(i.asLong()).isEqualTo(-7);
            assertThat(f.asDouble()).isEqualTo(1.5);
        }
    }

    @Test
    @Tag("any-cpython")
    void callsTakePositionalAndKeywordArguments() {
        PY.exec("def f(a, b=10, *, c=100):\n    return a + b + c");
        try (PyObject f = PY.getGlobal("f")) {
            try (PyObject r = f.call(1)) {
                assertThat(r.asLong()).isEqualTo(111);
            }
            try (PyObject r = f.callKw(Map.of("c", 3, "b", 2), 1)) {
                assertThat(r.asLong()).isEqualTo(6);
            }
        }
    }

    @Test
    @Tag("any-cpython")
    void aPythonExceptionArrivesWithTypeMessageAndTraceback() {
        PY.exec("def fail():\n    raise ValueError('bad value 42')");
        try (PyObject fail = PY.getGlobal("fail")) {
            assertThatThrownBy(fail::call).isInstanceOfSatisfying(PythonException.class, e -> {
                assertThat(e.pythonType()).isEqualTo("ValueError");
                assertThat(e.pythonMessage()).isEqualTo("bad value 42");
                assertThat(e.pythonTraceback()).contains("Traceback (most recent call last)").contains("in fail")
                        .contains("ValueError: bad value 42");
            });
        }
        assertThatThrownBy(() -> PY.importModule("no_such_module_xyz")).isInstanceOfSatisfying(PythonException.class,
                e -> assertThat(e.pythonType()).isEqualTo("ModuleNotFoundError"));
        assertThatThrownBy(() -> PY.getGlobal("undefined_name")).isInstanceOfSatisfying(PythonException.class,
                e -> assertThat(e.pythonType()).isEqualTo("NameError"));
        assertThatThrownBy(() -> PY.exec("import json\njson.loads('{')")).isInstanceOfSatisfying(PythonException.class,
                e -> assertThat(e.pythonType()).as("a module's exception, named with its module")
                        .isEqualTo("json.decoder.JSONDecodeError"));
    }

    @Test
    @Tag("any-cpython")
    void aJavaExceptionInAnUpcallArrivesInPythonAndTheJvmLives() {
        try (PyObject boom = PY.function(args -> {
            throw new IllegalStateException("thrown in Java");
        }); PyObject add = PY.function(args -> args[0].asLong() + args[1].asLong())) {
            PY.setGlobal("boom", boom);
            PY.setGlobal("add", add);
            PY.exec("try:\n    boom()\n    caught = None\nexcept RuntimeError as e:\n    caught = str(e)");
            try (PyObject caught = PY.getGlobal("caught")) {
                assertThat(caught.str()).isEqualTo("java.lang.IllegalStateException: thrown in Java");
            }
            try (PyObject r = PY.eval("add(40, 2)")) {
                assertThat(r.asLong()).isEqualTo(42);
            }
            assertThatThrownBy(() -> PY.eval("boom()")).isInstanceOfSatisfying(PythonException.class,
                    e -> assertThat(e.pythonType()).isEqualTo("RuntimeError"));
        }
    }

    @Test
    @Tag("any-cpython")
    void aPythonErrorRaisedInsideAnUpcallKeepsItsTypeOnTheWayBack() {
        try (PyObject inner = PY.function(args -> PY.eval("1/0"))) {
            PY.setGlobal("inner", inner);
            assertThatThrownBy(() -> PY.eval("inner()")).isInstanceOfSatisfying(PythonException.class,
                    e -> assertThat(e.pythonType()).isEqualTo("ZeroDivisionError"));
        }
    }

    @Test
    @Tag("any-cpython")
    void aClosedObjectRefusesUse() {
        PyObject o = PY.eval("[1, 2]");
        o.close();
        o.close();
        assertThatThrownBy(o::str).isInstanceOf(IllegalStateException.class);
    }

    @Test
    @Tag("any-cpython")
    void startingTwiceReturnsTheSameInterpreter() {
        assertThat(Python.start()).isSameAs(PY);
        assertThat(Python.attach()).isSameAs(PY);
        assertThat(PY.version()).startsWith("3.");
    }
}
