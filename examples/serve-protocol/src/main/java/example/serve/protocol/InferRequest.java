package example.serve.protocol;

import static example.serve.protocol.ProtocolException.badRequest;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.core.exc.StreamReadException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * An inference request of the Open Inference Protocol (KServe v2), read from its JSON and, with the
 * binary tensor data extension, the bytes after it.
 *
 * <p>The body is JSON alone, or, when the request has the {@code Inference-Header-Content-Length}
 * header, that many bytes of JSON followed by the binary data of the inputs that carry a
 * {@code binary_data_size} parameter, in the order they appear in {@code inputs}, back to back.
 *
 * @param id                the request's {@code id}, echoed in the response; null if none
 * @param inputs            the inputs, in their order
 * @param outputs           the outputs asked for; null: all of the model's, as JSON unless {@code binaryDataOutput}
 * @param binaryDataOutput  the request parameter {@code binary_data_output}
 */
record InferRequest(String id, List<Input> inputs, List<Output> outputs, boolean binaryDataOutput) {
    /** The v2 datatypes and the bytes of one element (BYTES: variable). */
    static final Map<String, Integer> DATATYPES = Map.ofEntries(Map.entry("BOOL", 1), Map.entry("UINT8", 1),
            Map.entry("UINT16", 2), Map.entry("UINT32", 4), Map.entry("UINT64", 8), Map.entry("INT8", 1),
            Map.entry("INT16", 2), Map.entry("INT32", 4), Map.entry("INT64", 8), Map.entry("FP16", 2),
            Map.entry("FP32", 4), Map.entry("FP64", 8), Map.entry("BF16", 2), Map.entry("BYTES", -1));

    private static final JsonFactory JSON = JsonFactory.builder().build();

    /**
     * One input tensor.
     *
     * @param name           its name
     * @param datatype       its v2 datatype, as given
     * @param shape          its shape, as given
     * @param values         the JSON {@code data}, flattened in row-major order; null if none
     * @param dataProblem    why {@code data} could not be read as numbers; null if it could
     * @param binaryDataSize the {@code binary_data_size} parameter; -1 if none
     * @param body           the request body that holds the binary data; null without it
     * @param offset         where this input's binary data starts in {@code body}
     */
    record Input(String name, String datatype, long[] shape, float[] values, String dataProblem, long binaryDataSize,
                 byte[] body, int offset) {}

    /**
     * One output asked for.
     *
     * @param name       its name
     * @param binaryData the {@code binary_data} parameter; null if not given
     */
    record Output(String name, Boolean binaryData) {}

    /**
     * Reads a request body.
     *
     * @param body         the body's bytes
     * @param length       how many of them the body has
     * @param headerLength the {@code Inference-Header-Content-Length}, or -1 when the request has none
     * @return the request, its binary inputs pointing into {@code body}
     * @throws ProtocolException (400) for malformed JSON, a field of the wrong kind, or binary data
     *                           that does not add up to what the body holds
     */
    static InferRequest parse(byte[] body, int length, long headerLength) {
        if (headerLength > length) {
            throw badRequest("Inference-Header-Content-Length " + headerLength + " is larger than the body ("
                    + length + " bytes)");
        }
        int jsonLength = headerLength < 0 ? length : (int) headerLength;
        InferRequest r;
        try (JsonParser p = JSON.createParser(body, 0, jsonLength)) {
            r = read(p);
            if (p.nextToken() != null) {
                throw badRequest("malformed JSON: more after the request object at " + where(p));
            }
        } catch (InputCoercionException e) {
            throw badRequest("a number out of range: " + e.getOriginalMessage());
        } catch (StreamReadException e) {
            throw badRequest("malformed JSON: " + e.getOriginalMessage() + " at " + where(e.getProcessor()));
        } catch (IOException e) {
            throw badRequest("malformed JSON: " + e.getMessage());
        }
        return r.withBinary(body, jsonLength, length, headerLength >= 0);
    }

    private static String where(JsonParser p) {
        return p == null ? "?" : "byte " + p.currentLocation().getByteOffset();
    }

    /** The binary inputs' data pointed at, in order, after the JSON; it must fill the rest of the body exactly. */
    private InferRequest withBinary(byte[] body, int jsonLength, int length, boolean hasHeader) {
        long at = jsonLength;
        List<Input> placed = new ArrayList<>(inputs.size());
        for (Input in : inputs) {
            if (in.binaryDataSize < 0) {
                placed.add(in);
                continue;
            }
            if (!hasHeader) {
                throw badRequest("input " + in.name + " has binary_data_size but the request has no "
                        + "Inference-Header-Content-Length header");
            }
            if (at + in.binaryDataSize > length) {
                throw badRequest("truncated binary data: input " + in.name + " has binary_data_size "
                        + in.binaryDataSize + " but the body holds " + (length - at) + " more bytes");
            }
            placed.add(new Input(in.name, in.datatype, in.shape, in.values, in.dataProblem, in.binaryDataSize, body,
                    (int) at));
            at += in.binaryDataSize;
        }
        if (at != length) {
            throw badRequest("the body has " + (length - at) + " bytes after the JSON and the inputs' binary data");
        }
        return new InferRequest(id, List.copyOf(placed), outputs, binaryDataOutput);
    }

    private static InferRequest read(JsonParser p) throws IOException {
        if (p.nextToken() != JsonToken.START_OBJECT) {
            throw badRequest("the request must be a JSON object");
        }
        String id = null;
        List<Input> inputs = null;
        List<Output> outputs = null;
        boolean binaryDataOutput = false;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken t = p.nextToken();
            switch (field) {
                case "id" -> {
                    if (t != JsonToken.VALUE_STRING) {
                        throw badRequest("id must be a string");
                    }
                    id = p.getText();
                }
                case "inputs" -> {
                    expect(p, t, JsonToken.START_ARRAY, "inputs must be an array");
                    inputs = new ArrayList<>();
                    while (p.nextToken() != JsonToken.END_ARRAY) {
                        inputs.add(readInput(p));
                    }
                }
                case "outputs" -> {
                    expect(p, t, JsonToken.START_ARRAY, "outputs must be an array");
                    outputs = new ArrayList<>();
                    while (p.nextToken() != JsonToken.END_ARRAY) {
                        outputs.add(readOutput(p));
                    }
                }
                case "parameters" -> {
                    expect(p, t, JsonToken.START_OBJECT, "parameters must be an object");
                    while (p.nextToken() == JsonToken.FIELD_NAME) {
                        String name = p.currentName();
                        JsonToken v = p.nextToken();
                        if (name.equals("binary_data_output")) {
                            binaryDataOutput = bool(p, v, "binary_data_output");
                        } else {
                            p.skipChildren();
                        }
                    }
                }
                default -> p.skipChildren();
            }
        }
        if (inputs == null) {
            throw badRequest("the request has no inputs");
        }
        return new InferRequest(id, inputs, outputs, binaryDataOutput);
    }

    private static Input readInput(JsonParser p) throws IOException {
        expect(p, p.currentToken(), JsonToken.START_OBJECT, "each input must be an object");
        String name = null;
        String datatype = null;
        long[] shape = null;
        FloatList values = null;
        String problem = null;
        long binarySize = -1;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken t = p.nextToken();
            switch (field) {
                case "name" -> name = string(p, t, "an input's name");
                case "datatype" -> datatype = string(p, t, "an input's datatype");
                case "shape" -> shape = readShape(p, t);
                case "data" -> {
                    expect(p, t, JsonToken.START_ARRAY, "an input's data must be an array");
                    values = new FloatList();
                    problem = readData(p, values, 0);
                }
                case "parameters" -> {
                    expect(p, t, JsonToken.START_OBJECT, "an input's parameters must be an object");
                    while (p.nextToken() == JsonToken.FIELD_NAME) {
                        String param = p.currentName();
                        JsonToken v = p.nextToken();
                        if (param.equals("binary_data_size")) {
                            if (v != JsonToken.VALUE_NUMBER_INT) {
                                throw badRequest("binary_data_size must be an integer");
                            }
                            binarySize = p.getLongValue();
                            if (binarySize < 0) {
                                throw badRequest("binary_data_size " + binarySize + " is negative");
                            }
                        } else {
                            p.skipChildren();
                        }
                    }
                }
                default -> p.skipChildren();
            }
        }
        if (name == null || datatype == null || shape == null) {
            throw badRequest("an input needs a name, a datatype and a shape");
        }
        if (values != null && binarySize >= 0) {
            throw badRequest("input " + name + " has both data and binary_data_size");
        }
        if (values == null && binarySize < 0) {
            throw badRequest("input " + name + " has neither data nor binary_data_size");
        }
        return new Input(name, datatype, shape, values == null ? null : values.toArray(), problem, binarySize, null, 0);
    }

    private static long[] readShape(JsonParser p, JsonToken t) throws IOException {
        expect(p, t, JsonToken.START_ARRAY, "an input's shape must be an array of integers");
        long[] shape = new long[4];
        int n = 0;
        JsonToken e;
        while ((e = p.nextToken()) != JsonToken.END_ARRAY) {
            if (e != JsonToken.VALUE_NUMBER_INT) {
                throw badRequest("an input's shape must be an array of integers, not " + p.getText());
            }
            long d;
            try {
                d = p.getLongValue();
            } catch (InputCoercionException x) {
                throw badRequest("dimension " + p.getText() + " is out of range");
            }
            if (d < 0) {
                throw badRequest("dimension " + d + " is negative");
            }
            if (n == 32) {
                throw badRequest("a shape has at most 32 dimensions");
            }
            if (n == shape.length) {
                shape = Arrays.copyOf(shape, n * 2);
            }
            shape[n++] = d;
        }
        return Arrays.copyOf(shape, n);
    }

    /** Flattens nested arrays of numbers; returns what is not a number, or null. */
    private static String readData(JsonParser p, FloatList out, int depth) throws IOException {
        if (depth > 32) {
            throw badRequest("data is nested more than 32 deep");
        }
        String problem = null;
        JsonToken t;
        while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
            switch (t) {
                case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> out.add(p.getFloatValue());
                case START_ARRAY -> {
                    String inner = readData(p, out, depth + 1);
                    problem = problem == null ? inner : problem;
                }
                case null -> throw badRequest("malformed JSON: the body ends inside data");
                default -> {
                    p.skipChildren();
                    if (problem == null) {
                        problem = "data holds " + t.asString() + " where numbers are expected";
                    }
                    out.add(0);
                }
            }
        }
        return problem;
    }

    private static Output readOutput(JsonParser p) throws IOException {
        expect(p, p.currentToken(), JsonToken.START_OBJECT, "each output must be an object");
        String name = null;
        Boolean binary = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken t = p.nextToken();
            if (field.equals("name")) {
                name = string(p, t, "an output's name");
            } else if (field.equals("parameters")) {
                expect(p, t, JsonToken.START_OBJECT, "an output's parameters must be an object");
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String param = p.currentName();
                    JsonToken v = p.nextToken();
                    if (param.equals("binary_data")) {
                        binary = bool(p, v, "binary_data");
                    } else {
                        p.skipChildren();
                    }
                }
            } else {
                p.skipChildren();
            }
        }
        if (name == null) {
            throw badRequest("an output needs a name");
        }
        return new Output(name, binary);
    }

    private static void expect(JsonParser p, JsonToken t, JsonToken wanted, String message) {
        if (t == null) {
            throw badRequest("malformed JSON: the body ends early at " + where(p));
        }
        if (t != wanted) {
            throw badRequest(message);
        }
    }

    private static String string(JsonParser p, JsonToken t, String what) throws IOException {
        if (t != JsonToken.VALUE_STRING) {
            throw badRequest(what + " must be a string");
        }
        return p.getText();
    }

    private static boolean bool(JsonParser p, JsonToken t, String what) {
        if (t != JsonToken.VALUE_TRUE && t != JsonToken.VALUE_FALSE) {
            throw badRequest(what + " must be true or false");
        }
        return t == JsonToken.VALUE_TRUE;
    }

    /** A growable float array. */
    private static final class FloatList {
        private float[] a = new float[256];
        private int n;

        void add(float v) {
            if (n == a.length) {
                a = Arrays.copyOf(a, n * 2);
            }
            a[n++] = v;
        }

        float[] toArray() {
            return n == a.length ? a : Arrays.copyOf(a, n);
        }
    }
}
