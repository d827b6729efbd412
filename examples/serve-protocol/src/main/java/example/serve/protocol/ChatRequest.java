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
import java.util.Set;

/**
 * A request of OpenAI's chat completions endpoint, read from its JSON: {@code {"model": str,
 * "messages": [{"role", "content": str}], "stream"?: bool, "stream_options"?: {"include_usage": bool},
 * "max_tokens" | "max_completion_tokens"?: int, "temperature"?: 0..2, "top_p"?: (0, 1], "seed"?: int,
 * "stop"?: str | [str], "n"?: 1, "user"?: str}}. Fields given as null count as not given, as OpenAI's
 * clients send them; other fields (tools, penalties, log-probabilities, response formats) are
 * refused rather than ignored, since this service would not honour them. The defaults are OpenAI's
 * (temperature 1, top-p 1) but for the reply's length: at most {@link #DEFAULT_MAX_TOKENS} tokens
 * unless told.
 *
 * @param model        the model named
 * @param messages     the conversation, each {@code role} system, user or assistant and {@code content} a string
 * @param stream       whether the reply goes back as server-sent events
 * @param includeUsage whether a streamed reply ends with a usage chunk ({@code stream_options.include_usage})
 * @param maxTokens    the most tokens of the reply
 * @param temperature  the sampling temperature (0: greedy)
 * @param topP         nucleus sampling's probability mass
 * @param seed         the sampler's seed, or null for a fresh one
 * @param stop         the stop strings (at most four)
 */
record ChatRequest(String model, List<Message> messages, boolean stream, boolean includeUsage, long maxTokens,
                   double temperature, double topP, Long seed, List<String> stop) {
    /** The most tokens of a reply when the request does not say. */
    static final long DEFAULT_MAX_TOKENS = 256;
    /** The most stop strings of one request, as OpenAI's API takes. */
    static final int MAX_STOP = 4;

    private static final Set<String> ROLES = Set.of("system", "user", "assistant");
    private static final JsonFactory JSON = JsonFactory.builder().build();

    /** One message of the conversation. */
    record Message(String role, String content) {}

    /**
     * Reads a request body.
     *
     * @param body the body's bytes
     * @return the request
     * @throws OpenAiError (400) for malformed JSON, a missing, unknown or ill-typed field, or a value out of range
     */
    static ChatRequest parse(byte[] body) {
        try (JsonParser p = JSON.createParser(body)) {
            ChatRequest r = read(p);
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

    /** {@return the messages as the chat model's input: a JSON list of {@code {"role", "content"}}} */
    String messagesJson() {
        StringBuilder b = new StringBuilder("[");
        for (Message m : messages) {
            b.append(b.length() > 1 ? "," : "").append("{\"role\":").append(InferenceProtocol.quote(m.role()))
                    .append(",\"content\":").append(InferenceProtocol.quote(m.content())).append('}');
        }
        return b.append(']').toString();
    }

    /** {@return the generation parameters as the chat model's input, a JSON object} */
    String parametersJson() {
        StringBuilder b = new StringBuilder("{\"max_new_tokens\":").append(maxTokens)
                .append(",\"temperature\":").append(temperature).append(",\"top_p\":").append(topP)
                .append(",\"seed\":").append(seed == null ? "null" : seed.toString()).append(",\"stop\":[");
        for (int i = 0; i < stop.size(); i++) {
            b.append(i == 0 ? "" : ",").append(InferenceProtocol.quote(stop.get(i)));
        }
        return b.append("]}").toString();
    }

    private static ChatRequest read(JsonParser p) throws IOException {
        if (p.nextToken() != JsonToken.START_OBJECT) {
            throw invalid(null, "the request body must be a JSON object");
        }
        String model = null;
        List<Message> messages = null;
        boolean stream = false;
        Boolean includeUsage = null;
        Long maxTokens = null;
        Long maxCompletionTokens = null;
        double temperature = 1;
        double topP = 1;
        Long seed = null;
        List<String> stop = List.of();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken t = p.nextToken();
            if (t == JsonToken.VALUE_NULL) {
                continue;   // an optional field given as null: not given
            }
            switch (field) {
                case "model" -> model = string(p, t, "model");
                case "messages" -> messages = readMessages(p, t);
                case "stream" -> stream = bool(t, "stream");
                case "stream_options" -> includeUsage = readStreamOptions(p, t);
                case "max_tokens" -> maxTokens = integer(p, t, "max_tokens", 1);
                case "max_completion_tokens" -> maxCompletionTokens = integer(p, t, "max_completion_tokens", 1);
                case "temperature" -> temperature = number(p, t, "temperature", 0, 2, true);
                case "top_p" -> topP = number(p, t, "top_p", 0, 1, false);
                case "seed" -> seed = integer(p, t, "seed", Long.MIN_VALUE);
                case "stop" -> stop = readStop(p, t);
                case "n" -> {
                    if (integer(p, t, "n", 1) != 1) {
                        throw invalid("n", "n must be 1: this service makes one choice a request");
                    }
                }
                case "user" -> string(p, t, "user");
                default -> throw invalid(field, "unrecognized request argument supplied: " + field);
            }
        }
        if (model == null) {
            throw invalid("model", "you must provide a model parameter");
        }
        if (messages == null) {
            throw invalid("messages", "missing required parameter: 'messages'");
        }
        if (includeUsage != null && !stream) {
            throw invalid("stream_options", "stream_options are only allowed when 'stream' is true");
        }
        long most = maxCompletionTokens != null ? maxCompletionTokens : maxTokens != null ? maxTokens : DEFAULT_MAX_TOKENS;
        return new ChatRequest(model, messages, stream, Boolean.TRUE.equals(includeUsage), most, temperature, topP, seed,
                stop);
    }

    private static List<Message> readMessages(JsonParser p, JsonToken t) throws IOException {
        if (t != JsonToken.START_ARRAY) {
            throw invalid("messages", "messages must be an array of {role, content} objects");
        }
        List<Message> messages = new ArrayList<>();
        for (JsonToken item = p.nextToken(); item != JsonToken.END_ARRAY; item = p.nextToken()) {
            String at = "'$.messages[" + messages.size() + "]'";
            if (item != JsonToken.START_OBJECT) {
                throw invalid("messages", at + " is not an object");
            }
            String role = null;
            String content = null;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken v = p.nextToken();
                switch (field) {
                    case "role" -> {
                        if (v != JsonToken.VALUE_STRING || !ROLES.contains(p.getText())) {
                            throw invalid("messages", at + ".role must be one of 'system', 'user' or 'assistant'");
                        }
                        role = p.getText();
                    }
                    case "content" -> {
                        if (v != JsonToken.VALUE_STRING) {
                            throw invalid("messages", at + ".content must be a string (content parts are not taken)");
                        }
                        content = p.getText();
                    }
                    default -> throw invalid("messages", at + " has an unrecognized field: " + field);
                }
            }
            if (role == null) {
                throw invalid("messages", at + " has no role");
            }
            if (content == null) {
                throw invalid("messages", at + " has no content");
            }
            messages.add(new Message(role, content));
        }
        if (messages.isEmpty()) {
            throw invalid("messages", "messages is an empty array: give at least one message");
        }
        return List.copyOf(messages);
    }

    private static Boolean readStreamOptions(JsonParser p, JsonToken t) throws IOException {
        if (t != JsonToken.START_OBJECT) {
            throw invalid("stream_options", "stream_options must be an object");
        }
        boolean include = false;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken v = p.nextToken();
            if (!field.equals("include_usage")) {
                throw invalid("stream_options", "unrecognized stream option: " + field);
            }
            include = bool(v, "stream_options.include_usage");
        }
        return include;
    }

    private static List<String> readStop(JsonParser p, JsonToken t) throws IOException {
        if (t == JsonToken.VALUE_STRING) {
            return List.of(p.getText());
        }
        if (t != JsonToken.START_ARRAY) {
            throw invalid("stop", "stop must be a string or an array of strings");
        }
        List<String> stop = new ArrayList<>();
        for (JsonToken item = p.nextToken(); item != JsonToken.END_ARRAY; item = p.nextToken()) {
            if (item != JsonToken.VALUE_STRING) {
                throw invalid("stop", "'$.stop[" + stop.size() + "]' is not a string");
            }
            if (stop.size() == MAX_STOP) {
                throw invalid("stop", "stop has more than " + MAX_STOP + " strings");
            }
            stop.add(p.getText());
        }
        return List.copyOf(stop);
    }

    private static String string(JsonParser p, JsonToken t, String field) throws IOException {
        if (t != JsonToken.VALUE_STRING) {
            throw invalid(field, field + " must be a string");
        }
        return p.getText();
    }

    private static boolean bool(JsonToken t, String field) {
        if (t != JsonToken.VALUE_TRUE && t != JsonToken.VALUE_FALSE) {
            throw invalid(field, field + " must be true or false");
        }
        return t == JsonToken.VALUE_TRUE;
    }

    private static long integer(JsonParser p, JsonToken t, String field, long min) throws IOException {
        if (t != JsonToken.VALUE_NUMBER_INT || p.getLongValue() < min) {
            throw invalid(field, field + " must be an integer" + (min == Long.MIN_VALUE ? "" : " of at least " + min));
        }
        return p.getLongValue();
    }

    /** {@return a number in [min, max], or in (min, max] unless {@code minIncluded}} */
    private static double number(JsonParser p, JsonToken t, String field, double min, double max, boolean minIncluded)
            throws IOException {
        double v = t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT ? p.getDoubleValue() : Double.NaN;
        if (!(minIncluded ? v >= min : v > min) || !(v <= max)) {
            throw invalid(field, field + " must be a number " + (minIncluded ? "from " + min : "over " + min) + " to " + max);
        }
        return v;
    }
}
