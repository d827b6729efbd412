package io.github.dlpack4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonDlpack;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each model source gives, bit for bit, the answers torch gives when the same model runs directly
 * in Python on the same inputs: for each dtype, one input and output, a tuple and a dict of
 * outputs, with and without batching.
 */
class TorchAnswersTest {
    /** The models: {@code One} returns a tensor, {@code Several} a tuple, {@code Named} a dict; every output keeps the rows. */
    private static final String MODELS = """
            import torch


            def mix(x: torch.Tensor) -> torch.Tensor:
                if x.dtype == torch.bool:
                    return x ^ x.flip(1)
                if x.is_floating_point():
                    return torch.sin(x) * 3.0 + x.flip(1) / 7.0
                return x * 3 + x.flip(1)  # uint8 wraps


            def combine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
                if a.dtype == torch.bool:
                    return a & ~b
                return a * b - b


            class One(torch.nn.Module):
                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    return mix(x)


            class Several(torch.nn.Module):
                def forward(self, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
                    return mix(a), combine(a, b), a > b


            class Named(torch.nn.Module):
                def forward(self, a: torch.Tensor, b: torch.Tensor) -> dict[str, torch.Tensor]:
                    return {"mixed": mix(b), "combined": combine(a, b), "greater": a > b}


            def make(kind):
                \"""The model as a callable of DLPack objects (for factory and source).\"""
                model = globals()[kind]()
                return lambda *xs: model(*(torch.from_dlpack(x) for x in xs))
            """;

    /** Saves each model, and runs one directly as torch does. */
    private static final String HARNESS = """
            import torch
            import torch_answers


            def script(kind, path):
                torch.jit.save(torch.jit.script(getattr(torch_answers, kind)()), path)


            def export(kind, dtype, path):
                names = ["x"] if kind == "One" else ["a", "b"]
                examples = tuple(torch.zeros(2, 3, dtype=getattr(torch, dtype)) for _ in names)
                rows = torch.export.Dim("rows", min=1, max=1024)
                program = torch.export.export(getattr(torch_answers, kind)(), examples,
                                              dynamic_shapes={n: {0: rows} for n in names})
                torch.export.save(program, path)


            def direct(source, kind, path, *inputs):
                \"""The model loaded by hand and run on torch's own copies of the inputs, its outputs by name.\"""
                if source == "torchScript":
                    model = torch.jit.load(path, map_location="cpu").eval()
                elif source == "exportedProgram":
                    model = torch.export.load(path).module()
                else:
                    model = getattr(torch_answers, kind)()
                with torch.inference_mode():
                    out = model(*(torch.from_dlpack(x).clone() for x in inputs))
                if isinstance(out, dict):
                    return {k: v.contiguous() for k, v in out.items()}
                if isinstance(out, tuple):
                    return {f"output{i}": v.contiguous() for i, v in enumerate(out)}
                return {"y": out.contiguous()}


            def names(outputs):
                return list(outputs)
            """;

    @BeforeAll
    static void modules() {
        Models.pythonModule("torch_answers", MODELS);
        Models.pythonModule("torch_answers_harness", HARNESS);
    }

    static Stream<Arguments> cases() {
        List<Arguments> cases = new ArrayList<>();
        for (String source : List.of("torchScript", "exportedProgram", "factory", "source")) {
            for (DataType dtype : List.of(DataType.FLOAT32, DataType.FLOAT64, DataType.INT64, DataType.UINT8, DataType.BOOL)) {
                for (String kind : List.of("One", "Several", "Named")) {
                    cases.add(Arguments.of(source, dtype, kind, false));
                    cases.add(Arguments.of(source, dtype, kind, true));
                }
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} {1} {2} batched={3}")
    @MethodSource("cases")
    void eachSourceAnswersBitForBitAsTorchRunDirectly(String source, DataType dtype, String kind, boolean batched) {
        Path file = artifact(source, kind, dtype);
        List<String> inputs = kind.equals("One") ? List.of("x") : List.of("a", "b");
        PythonModel.Builder b = PythonModel.builder().python(Models.PY).name(kind);
        switch (source) {
            case "torchScript" -> b.torchScript(file);
            case "exportedProgram" -> b.exportedProgram(file);
            case "factory" -> b.factory("torch_answers", "make", kind);
            default -> b.source(MODELS, "make", kind);
        }
        inputs.forEach(n -> b.input(n, dtype, -1, 3));
        if (kind.equals("One")) {
            b.output("y", dtype, -1, 3);
        }
        if (batched) {
            b.batching(8, Duration.ofMillis(200));
        }
        Random random = new Random(31L * source.hashCode() + 7L * dtype.hashCode() + kind.hashCode());
        // Batched, three requests of 1, 2 and 3 rows stack into one call; else one call of 4 rows.
        long[] rows = batched ? new long[] {1, 2, 3} : new long[] {4};
        List<Map<String, Tensor>> requests = new ArrayList<>();
        try (PythonModel model = b.build()) {
            List<CompletableFuture<Map<String, Tensor>>> answers = new ArrayList<>();
            for (long r : rows) {
                Map<String, Tensor> request = new LinkedHashMap<>();
                inputs.forEach(n -> request.put(n, randomTensor(dtype, random, r)));
                requests.add(request);
                answers.add(model.submit(request));
            }
            for (int i = 0; i < rows.length; i++) {
                Map<String, Tensor> answer = answers.get(i).join();
                try {
                    assertSameAsDirect(source, kind, file, requests.get(i), answer);
                } finally {
                    answer.values().forEach(Tensor::close);
                }
            }
            if (batched) {
                assertThat(model.stats().largestBatchRows()).as("the requests ran stacked").isEqualTo(6);
            }
        } finally {
            requests.forEach(r -> r.values().forEach(Tensor::close));
        }
    }

    /** The saved model of {@code source} (null for factory and source), saved once per kind (and dtype for exports). */
    private static Path artifact(String source, String kind, DataType dtype) {
        Path file = switch (source) {
            case "torchScript" -> Models.file("answers-" + kind + ".pt");
            case "exportedProgram" -> Models.file("answers-" + kind + "-" + dtype + ".pt2");
            default -> null;
        };
        if (file != null && !Files.exists(file)) {
            try (PyObject harness = Models.PY.importModule("torch_answers_harness")) {
                if (source.equals("torchScript")) {
                    harness.callMethod("script", kind, file.toString()).close();
                } else {
                    harness.callMethod("export", kind, dtype.toString(), file.toString()).close();
                }
            }
        }
        return file;
    }

    private static Tensor randomTensor(DataType dtype, Random random, long rows) {
        Tensor t = Tensor.zeros(dtype, rows, 3);
        for (long i = 0; i < rows; i++) {
            for (long j = 0; j < 3; j++) {
                if (dtype.equals(DataType.BOOL)) {
                    t.setBoolean(random.nextBoolean(), i, j);
                } else if (dtype.equals(DataType.UINT8)) {
                    t.setLong(random.nextInt(256), i, j);
                } else if (dtype.equals(DataType.INT64)) {
                    t.setLong(random.nextLong(-1_000_000_000L, 1_000_000_000L), i, j);
                } else {
                    t.setDouble(random.nextGaussian() * 10, i, j);
                }
            }
        }
        return t;
    }

    private static void assertSameAsDirect(String source, String kind, Path file, Map<String, Tensor> inputs,
                                           Map<String, Tensor> answer) {
        Object[] args = new Object[inputs.size() + 3];
        args[0] = source;
        args[1] = kind;
        args[2] = file == null ? null : file.toString();
        List<PyObject> views = new ArrayList<>();
        try (PyObject harness = Models.PY.importModule("torch_answers_harness")) {
            int i = 3;
            for (Tensor t : inputs.values()) {
                PyObject view = PythonDlpack.toPython(t);
                views.add(view);
                args[i++] = view;
            }
            try (PyObject direct = harness.callMethod("direct", args);
                 PyObject keys = harness.callMethod("names", direct)) {
                assertThat(answer.keySet()).as("output names").containsExactlyElementsOf(namesOf(keys));
                for (String name : answer.keySet()) {
                    try (PyObject value = direct.get(name);
                         ManagedTensor expected = PythonDlpack.fromDlpack(value)) {
                        assertSameBits(name, answer.get(name), expected.tensor());
                    }
                }
            }
        } finally {
            views.forEach(PyObject::close);
        }
    }

    private static List<String> namesOf(PyObject keys) {
        return ((List<?>) keys.toJava()).stream().map(String.class::cast).toList();
    }

    /** Same dtype, shape and bits of every element (a float's raw bits: -0.0 and NaN payloads included). */
    static void assertSameBits(String name, Tensor actual, Tensor expected) {
        assertThat(actual.dtype()).as(name + "'s dtype").isEqualTo(expected.dtype());
        assertThat(actual.shape()).as(name + "'s shape").containsExactly(expected.shape());
        assertThat(bits(actual)).as(name + "'s elements, bit for bit").containsExactly(bits(expected));
    }

    private static long[] bits(Tensor t) {
        if (t.dtype().equals(DataType.FLOAT32)) {
            float[] v = t.toFloatArray();
            long[] out = new long[v.length];
            for (int i = 0; i < v.length; i++) {
                out[i] = Float.floatToRawIntBits(v[i]);
            }
            return out;
        }
        if (t.dtype().equals(DataType.FLOAT64)) {
            return Arrays.stream(t.toDoubleArray()).mapToLong(Double::doubleToRawLongBits).toArray();
        }
        return t.toLongArray();
    }
}
