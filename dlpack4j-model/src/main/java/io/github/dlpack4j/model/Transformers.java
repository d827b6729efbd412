package io.github.dlpack4j.model;

import java.nio.file.Path;
import java.util.Map;

/**
 * A transformers causal language model directory as a streaming chat {@link PythonModel}: the
 * model and its tokenizer ({@code AutoModelForCausalLM}, {@code AutoTokenizer}) in the embedded
 * interpreter, the tokenizer's own chat template, generation token by token with the model's KV
 * cache, and its text streamed to Java as it is decoded ({@link PythonModel#stream}).
 *
 * {@snippet :
 * try (PythonModel chat = Transformers.chat(Path.of("tiny-lm")).build()) {
 *     chat.stream(Map.of(Transformers.MESSAGES, "[{\"role\": \"user\", \"content\": \"Hello\"}]",
 *                        Transformers.PARAMETERS, "{\"max_new_tokens\": 32, \"temperature\": 0}"))
 *         .subscribe(subscriber);   // one ModelResult a piece of text: item.text(Transformers.DELTA)
 * }
 * }
 *
 * <p>Inputs, one row each: {@value #MESSAGES}, a JSON list of {@code {"role", "content"}} messages,
 * and {@value #PARAMETERS}, a JSON object: {@code max_new_tokens} (256), {@code temperature} (0:
 * greedy), {@code top_p} (1.0), {@code seed} (none), {@code stop} (a list of strings). Each item has
 * a text output {@value #DELTA}: the text decoded since the last item, never part of a character;
 * the last item has {@code ""} there and a value output {@value #FINISH}, a map of
 * {@code finish_reason} ({@code "stop"} for the end-of-sequence token or a stop string,
 * {@code "length"} for {@code max_new_tokens}), {@code prompt_tokens} and {@code completion_tokens}.
 * Greedy decoding equals transformers' own {@code generate(do_sample=False)} token for token.
 */
public final class Transformers {
    /** The messages input: a JSON list of {@code {"role", "content"}}. */
    public static final String MESSAGES = "messages";
    /** The generation parameters input: a JSON object. */
    public static final String PARAMETERS = "parameters";
    /** An item's text: what was decoded since the last item. */
    public static final String DELTA = "delta";
    /** The last item's value: {@code finish_reason}, {@code prompt_tokens}, {@code completion_tokens}. */
    public static final String FINISH = "finish";

    private Transformers() {
    }

    /**
     * {@return {@code s} as a JSON string literal, quotes included}: for the text of a message in
     * {@value #MESSAGES} or a stop string in {@value #PARAMETERS}
     *
     * @param s the text
     */
    public static String jsonString(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    /**
     * {@return a builder of a streaming chat model over a causal language model's directory}
     *
     * @param dir a transformers model directory with its tokenizer (and its chat template)
     */
    public static Builder chat(Path dir) {
        return new Builder(dir);
    }

    /** The settings of a chat model: those of the runtime, which are {@link PythonModel.Builder}'s. */
    public static final class Builder extends TextModelBuilder<Builder> {
        private Builder(Path dir) {
            super(dir);
        }

        @Override
        Builder self() {
            return this;
        }

        /**
         * Loads the model and its tokenizer once, and builds the {@link PythonModel}, warmed up on one
         * generated token.
         *
         * @return the model, ready for streams
         * @throws IllegalArgumentException if {@code dir} is not a directory
         * @throws io.github.dlpack4j.python.PythonException if transformers cannot load it
         */
        public PythonModel build() {
            return build("load_causal_lm", (model, loaded) -> model
                    .factory(SentenceTransformers.HELPERS, "chat_generator", loaded.get(0))
                    .textInput(MESSAGES).textInput(PARAMETERS).textOutput(DELTA).valueOutput(FINISH)
                    .warmUp(Map.of(MESSAGES, "[{\"role\": \"user\", \"content\": \"warm-up\"}]",
                            PARAMETERS, "{\"max_new_tokens\": 1}")));
        }
    }
}
