package io.github.dlpack4j.langchain4j;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicReference;

import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import io.github.dlpack4j.model.ModelListener;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.Transformers;
import io.github.dlpack4j.python.Python;

/**
 * A transformers causal language model as LangChain4j's {@link ChatModel}, run by its own Python in
 * the JVM's process ({@link Transformers#chat}): the tokenizer's chat template, generation token by
 * token with the KV cache, greedy when the temperature is 0 (equal to transformers' own
 * {@code generate}), else sampled with temperature and top-p (seeded by {@link Builder#seed}); the
 * request's temperature, top-p, most output tokens and stop sequences override the builder's. Tools,
 * JSON schemas, top-k and penalties are refused with {@code UnsupportedFeatureException}.
 *
 * {@snippet :
 * try (PythonChatModel chat = PythonChatModel.transformers(Path.of("tiny-lm")).maxNewTokens(64).build()) {
 *     String answer = chat.chat("Hello!");
 *     chat.streaming().chat("Hello again!", handler);   // the same model, streamed
 * }
 * }
 *
 * <p>{@link #chat(ChatRequest)} waits for the whole answer; {@link #streaming()} streams the same
 * model's text as it is decoded. Many threads may chat at once: the model's {@code workers} threads
 * interleave their generations one token at a time.
 */
public final class PythonChatModel implements ChatModel, AutoCloseable {
    private final ChatCalls calls;
    private final boolean owned;

    PythonChatModel(ChatCalls calls, boolean owned) {
        this.calls = calls;
        this.owned = owned;
    }

    /**
     * {@return a builder of a chat model over a transformers causal language model's directory}
     *
     * @param dir the model's directory, with its tokenizer and chat template
     */
    public static Builder transformers(Path dir) {
        return new Builder(Transformers.chat(dir));
    }

    /**
     * Wraps a streaming chat {@link PythonModel} (the signature {@link Transformers#chat} gives),
     * with default generation settings; the model stays the caller's.
     *
     * @param model the model
     * @return the chat model
     * @throws IllegalArgumentException if the model's signature is not a chat model's
     */
    public static PythonChatModel of(PythonModel model) {
        return new PythonChatModel(new ChatCalls(model, Builder.DEFAULTS), false);
    }

    /**
     * Generates the answer to a request and waits for it.
     *
     * @param request the messages and parameters
     * @return the answer, its token usage and finish reason
     * @throws dev.langchain4j.exception.UnsupportedFeatureException if it asks for tools, a schema,
     *                                                               top-k or penalties
     * @throws RuntimeException what failed the generation: the model's {@code PythonException},
     *                          {@code ModelTimeoutException}, {@code ModelOverloadedException}
     */
    @Override
    public ChatResponse doChat(ChatRequest request) {
        CompletableFuture<ChatResponse> answer = new CompletableFuture<>();
        AtomicReference<Flow.Subscription> subscription = new AtomicReference<>();
        calls.stream(request, subscription::set, d -> { }, answer::complete, answer::completeExceptionally);
        try {
            return answer.get();
        } catch (InterruptedException e) {
            Flow.Subscription s = subscription.get();
            if (s != null) {
                s.cancel();
            }
            Thread.currentThread().interrupt();
            throw new java.util.concurrent.CancellationException("interrupted while model " + calls.model().name()
                    + " generated");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException(e.getCause());
        }
    }

    /** {@return a streaming chat model over the same model (closing it closes nothing)} */
    public PythonStreamingChatModel streaming() {
        return new PythonStreamingChatModel(calls, false);
    }

    /** {@return the model it runs: its stats, its queue} */
    public PythonModel model() {
        return calls.model();
    }

    /** Closes the model it made ({@link #transformers}); a model given to {@link #of} stays open. */
    @Override
    public void close() {
        if (owned) {
            calls.model().close();
        }
    }

    @Override
    public String toString() {
        return "PythonChatModel[" + calls.model().name() + "]";
    }

    /**
     * The settings of a chat model: generation defaults ({@link #maxNewTokens}, {@link #temperature},
     * {@link #topP}, {@link #seed}, {@link #stop}) and the runtime's ({@link Transformers.Builder}'s).
     */
    public static final class Builder {
        static final ChatCalls.ChatDefaults DEFAULTS = new ChatCalls.ChatDefaults(256, 0, 1, null, List.of());
        private final Transformers.Builder settings;
        private int maxNewTokens = DEFAULTS.maxNewTokens();
        private double temperature = DEFAULTS.temperature();
        private double topP = DEFAULTS.topP();
        private Long seed;
        private List<String> stop = List.of();

        private Builder(Transformers.Builder settings) {
            this.settings = settings;
        }

        /**
         * The most tokens a request generates when it does not say (default 256).
         *
         * @param tokens at least 1
         * @return this builder
         */
        public Builder maxNewTokens(int tokens) {
            if (tokens < 1) {
                throw new IllegalArgumentException("maxNewTokens(" + tokens + "): at least 1");
            }
            this.maxNewTokens = tokens;
            return this;
        }

        /**
         * The sampling temperature when a request does not say (default 0: greedy decoding).
         *
         * @param temperature 0 or more
         * @return this builder
         */
        public Builder temperature(double temperature) {
            if (!(temperature >= 0)) {
                throw new IllegalArgumentException("temperature(" + temperature + "): 0 or more");
            }
            this.temperature = temperature;
            return this;
        }

        /**
         * Nucleus sampling's probability mass when a request does not say (default 1.0: all tokens).
         *
         * @param topP more than 0, at most 1
         * @return this builder
         */
        public Builder topP(double topP) {
            if (!(topP > 0 && topP <= 1)) {
                throw new IllegalArgumentException("topP(" + topP + "): more than 0, at most 1");
            }
            this.topP = topP;
            return this;
        }

        /**
         * The sampler's seed (default none): with a seed, a sampled answer is the same every time.
         *
         * @param seed the seed
         * @return this builder
         */
        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /**
         * Stop strings when a request gives none: the answer ends before the first of them.
         *
         * @param stop the strings
         * @return this builder
         */
        public Builder stop(List<String> stop) {
            this.stop = List.copyOf(stop);
            return this;
        }

        /**
         * The interpreter to load the model into; {@link Python#start()} when not given.
         *
         * @param python the process's interpreter
         * @return this builder
         */
        public Builder python(Python python) {
            settings.python(python);
            return this;
        }

        /**
         * Names the model; the directory's name by default.
         *
         * @param name the model's name
         * @return this builder
         */
        public Builder name(String name) {
            settings.name(name);
            return this;
        }

        /**
         * Batches the generations' decode steps, as {@link Transformers.Builder#batching}: those
         * waiting for their next token at once share one forward pass of up to {@code maxStreams}.
         *
         * @param maxStreams the most generations of one step (this sets {@link #workers} to it)
         * @param maxDelay   the longest a step waits for the other open generations
         * @return this builder
         */
        public Builder batching(int maxStreams, Duration maxDelay) {
            settings.batching(maxStreams, maxDelay);
            return this;
        }

        /**
         * How many generations advance at once, as {@link PythonModel.Builder#workers}.
         *
         * @param calls the model's stream threads
         * @return this builder
         */
        public Builder workers(int calls) {
            settings.workers(calls);
            return this;
        }

        /**
         * How many generations may be open beyond the workers, as {@link PythonModel.Builder#maxQueue}.
         *
         * @param requests the queue's size
         * @return this builder
         */
        public Builder maxQueue(int requests) {
            settings.maxQueue(requests);
            return this;
        }

        /**
         * A deadline for the first token of each answer, as {@link PythonModel.Builder#timeout}.
         *
         * @param firstToken the deadline
         * @return this builder
         */
        public Builder timeout(Duration firstToken) {
            settings.timeout(firstToken);
            return this;
        }

        /**
         * A deadline for each whole answer, as {@link PythonModel.Builder#streamTimeout}.
         *
         * @param answer the deadline
         * @return this builder
         */
        public Builder streamTimeout(Duration answer) {
            settings.streamTimeout(answer);
            return this;
        }

        /**
         * A listener of each answer's outcome, as {@link PythonModel.Builder#listener}.
         *
         * @param listener the listener
         * @return this builder
         */
        public Builder listener(ModelListener listener) {
            settings.listener(listener);
            return this;
        }

        private ChatCalls calls() {
            return new ChatCalls(settings.build(), new ChatCalls.ChatDefaults(maxNewTokens, temperature, topP, seed, stop));
        }

        /**
         * Loads the model and builds the chat model, which owns it.
         *
         * @return the chat model
         * @throws io.github.dlpack4j.python.PythonException if transformers cannot load the directory
         */
        public PythonChatModel build() {
            return new PythonChatModel(calls(), true);
        }

        /**
         * Loads the model and builds a streaming chat model, which owns it.
         *
         * @return the streaming chat model
         * @throws io.github.dlpack4j.python.PythonException if transformers cannot load the directory
         */
        public PythonStreamingChatModel buildStreaming() {
            return new PythonStreamingChatModel(calls(), true);
        }
    }
}
