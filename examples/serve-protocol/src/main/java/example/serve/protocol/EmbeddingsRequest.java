package example.serve.protocol;

import static example.serve.protocol.OpenAiError.invalid;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.core.exc.StreamReadException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * A request of OpenAI's embeddings endpoint, read from its JSON: {@code {"input": str | [str],
 * "model": str, "encoding_format"?: "float" | "base64", "dimensions"?: int, "user"?: str}}. As
 * OpenAI's API reference has it, the input is one string or an array of 1 to 2,048 strings, none
 * of them empty, and other fields are refused; arrays of token ids, which OpenAI also takes, are
 * refused here (this service tokenizes with the model's own tokenizer).
 *
 * @param input      the texts, in their order (one for a lone string)
 * @param model      the model named
 * @param base64     whether the embeddings go back as base64 of their little-endian float32 bytes
 * @param dimensions the {@code dimensions} asked for; -1 if none
 */
record EmbeddingsRequest(List<String> input, String model, boolean base64, long dimensions) {
    /** The most texts of one request, as OpenAI's API takes. */
    static final int MAX_INPUTS = 2048;

    private static final JsonFactory JSON = JsonFactory.builder().build();

    /**
     * Reads a request body.
     *
     * @param body the body's bytes
     * @return the request
     * @throws OpenAiError (400) for malformed JSON, a missing, unknown or ill-typed field, or an
     *                     input that is empty, too long an array or not strings
     */
    static EmbeddingsRequest parse(byte[] body) {
        try (JsonParser p = JSON.createParser(body)) {
            EmbeddingsRequest r = read(p);
            if (p.nextToken() != null) {
                throw invalid(null, "malformed JSON: more after the request object at byte "
                        + p.currentLocation().getByteOffset());
            }
            return r;
        } catch (InputCoercionException e) {
            throw invalid(null, "a number out of range: " + e.getOriginalMessage());
        } catch (StreamReadException e) {
            throw invalid(null, "malformed JSON: " + e.getOriginalMessage() + " at byte "
                    + (e.getProcessor() == null ? "?" : ((JsonParser) e.getProcessor()).currentLocation().getByteOffset()));
        } catch (IOException e) {
            throw invalid(null, "malformed JSON: " + e.getMessage());
        }
    }

    private static EmbeddingsRequest read(JsonParser p) throws IOException {
        if (p.nextToken() != JsonToken.START_OBJECT) {
            throw invalid(null, "the request body must be a JSON object");
        }
        List<String> input = null;
        String model = null;
        boolean base64 = false;
        long dimensions = -1;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken t = p.nextToken();
            if (t == JsonToken.VALUE_NULL) {
                continue;   // an optional field given as null, as OpenAI's clients send them: not given
            }
            switch (field) {
                case "input" -> input = readInput(p, t);
                case "model" -> model = string(p, t, "model");
                case "encoding_format" -> {
                    String format = string(p, t, "encoding_format");
                    if (!format.equals("float") && !format.equals("base64")) {
                        throw invalid("encoding_format", "encoding_format '" + format + "' is not one of 'float' or 'base64'");
                    }
                    base64 = format.equals("base64");
                }
                case "dimensions" -> {
                    if (t != JsonToken.VALUE_NUMBER_INT || p.getLongValue() < 1) {
                        throw invalid("dimensions", "dimensions must be an integer of at least 1");
                    }
                    dimensions = p.getLongValue();
                }
                case "user" -> string(p, t, "user");
                default -> throw invalid(field, "unrecognized request argument supplied: " + field);
            }
        }
        if (input == null) {
            throw invalid("input", "missing required parameter: 'input'");
        }
        if (model == null) {
            throw invalid("model", "you must provide a model parameter");
        }
        return new EmbeddingsRequest(input, model, base64, dimensions);
    }

    /** {@return the input's texts: a string, or an array of 1 to {@link #MAX_INPUTS} strings, none empty} */
    private static List<String> readInput(JsonParser p, JsonToken t) throws IOException {
        if (t == JsonToken.VALUE_STRING) {
            return List.of(text(p.getText(), "'$.input'"));
        }
        if (t != JsonToken.START_ARRAY) {
            throw invalid("input", "input must be a string or an array of strings");
        }
        List<String> texts = new ArrayList<>();
        for (JsonToken item = p.nextToken(); item != JsonToken.END_ARRAY; item = p.nextToken()) {
            String at = "'$.input[" + texts.size() + "]'";
            if (item == JsonToken.VALUE_NUMBER_INT || item == JsonToken.START_ARRAY) {
                throw invalid("input", at + " is a token id or an array of them: this service takes strings only");
            }
            if (item != JsonToken.VALUE_STRING) {
                throw invalid("input", at + " is not a string");
            }
            if (texts.size() == MAX_INPUTS) {
                throw invalid("input", "input has more than " + MAX_INPUTS + " items");
            }
            texts.add(text(p.getText(), at));
        }
        if (texts.isEmpty()) {
            throw invalid("input", "input is an empty array: give at least one string");
        }
        return texts;
    }

    private static String text(String s, String at) {
        if (s.isEmpty()) {
            throw invalid("input", at + " is an empty string, which OpenAI's API refuses too");
        }
        return s;
    }

    private static String string(JsonParser p, JsonToken t, String field) throws IOException {
        if (t != JsonToken.VALUE_STRING) {
            throw invalid(field, field + " must be a string");
        }
        return p.getText();
    }
}
