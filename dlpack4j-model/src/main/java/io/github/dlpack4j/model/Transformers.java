package io.github.dlpack4j.model;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

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
        private int maxBatchStreams = 1;
        private Duration maxDelay = Duration.ZERO;

        private Builder(Path dir) {
            super(dir);
        }

        @Override
        Builder self() {
            return this;
        }

        /**
         * Batches the streams' decode steps: the streams that wait for their next token at the same
         * moment run as one forward pass of up to {@code maxBatchRows} streams (their KV caches
         * left-padded to the longest and the padding masked), as continuous batching does. A stream
         * that joins or ends changes the next step's rows only; each stream's prompt runs as a
         * forward pass of its own; a stream alone steps as without batching. Each stream waiting for
         * a step holds one of the model's threads, so this sets {@link #workers} to
         * {@code maxBatchRows}. A step waits up to {@code maxDelay} for more streams to join
         * ({@link Duration#ZERO}: it takes those waiting); a longer delay fills batches at the cost of
         * each token's latency. Greedy replies are the unbatched ones token for token up to
         * floating-point rounding (a padded batch sums in another order); where every layer's cache is
         * not a plain {@code DynamicLayer} (sliding windows, recurrent state), each stream steps alone.
         * Without this, each stream steps alone (the model's threads take turns over the streams).
         *
         * @param maxBatchRows the most streams of one forward pass, at least 1
         * @param maxDelay     the longest a step waits for more streams, zero or more
         * @return this builder
         */
        @Override
        public Builder batching(int maxBatchRows, Duration maxDelay) {
            if (maxBatchRows < 1) {
                throw new IllegalArgumentException("maxBatchRows must be at least 1, not " + maxBatchRows);
            }
            if (Objects.requireNonNull(maxDelay, "maxDelay").isNegative()) {
                throw new IllegalArgumentException("maxDelay must not be negative, not " + maxDelay);
            }
            this.maxBatchStreams = maxBatchRows;
            this.maxDelay = maxDelay;
            return workers(maxBatchRows);
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
                    .factory(SentenceTransformers.HELPERS, "chat_generator", loaded.get(0), maxBatchStreams,
                            maxDelay.toNanos() / 1e9)
                    .textInput(MESSAGES).textInput(PARAMETERS).textOutput(DELTA).valueOutput(FINISH)
                    .warmUp(Map.of(MESSAGES, "[{\"role\": \"user\", \"content\": \"warm-up\"}]",
                            PARAMETERS, "{\"max_new_tokens\": 1}")));
        }
    }
}
