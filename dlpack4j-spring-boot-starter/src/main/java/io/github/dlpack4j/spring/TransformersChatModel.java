package io.github.dlpack4j.spring;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import io.github.dlpack4j.model.ModelResult;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.Transformers;

import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.ai.chat.metadata.ChatGenerationMetadata;
import org.springframework.ai.chat.metadata.ChatResponseMetadata;
import org.springframework.ai.chat.metadata.DefaultUsage;
import org.springframework.ai.chat.metadata.EmptyUsage;
import org.springframework.ai.chat.metadata.Usage;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import org.springframework.ai.chat.prompt.ChatOptions;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.ai.model.tool.StructuredOutputChatOptions;
import org.springframework.ai.model.tool.ToolCallingChatOptions;

import reactor.adapter.JdkFlowAdapter;
import reactor.core.publisher.Flux;

/**
 * A transformers causal language model's {@link PythonModel} ({@link Transformers#chat}) as Spring
 * AI's {@link ChatModel}: the starter makes one, the bean {@code <name>ChatModel}, beside the model
 * bean of each {@code dlpack4j.models.<name>.transformers-chat} entry when Spring AI is on the class
 * path.
 *
 * {@snippet :
 * class Assistant {                              // a @Service of the application's
 *     private final ChatModel chat;              // tinyChatModel, the only one
 *
 *     Assistant(ChatModel chat) {
 *         this.chat = chat;
 *     }
 *
 *     String answer(String question) {
 *         return chat.call(question);             // greedy unless the defaults or the prompt say otherwise
 *     }
 *
 *     Flux<String> pieces(String question) {     // the text as it is decoded
 *         return chat.stream(new Prompt(question)).map(r -> r.getResult().getOutput().getText());
 *     }
 * }
 * }
 *
 * <p>The prompt's system, user and assistant messages (text only) go through the tokenizer's own
 * chat template; the model generates token by token with its KV cache, greedy when the temperature
 * is 0 (then equal to transformers' {@code generate(do_sample=False)} token for token), else
 * sampled with temperature and top-p, seeded by {@link Defaults#seed()}. The prompt's
 * {@link ChatOptions} {@code maxTokens}, {@code temperature}, {@code topP} and
 * {@code stopSequences} override the {@link Defaults} (a stop sequence ends the text before it);
 * their {@code model} is not read (the bean is one model). What the model cannot do is refused with
 * an {@link IllegalArgumentException} before it runs: {@code topK}, {@code frequencyPenalty},
 * {@code presencePenalty}, tools, an output schema, media, tool calls and tool messages.
 *
 * <p>{@link #stream} is a {@link Flux} over the model's stream ({@link PythonModel#stream}): one
 * {@link ChatResponse} per piece of new text, never part of a character, then a last one with
 * {@code ""} that carries the finish reason and the token usage. Its requests reach the
 * generator (it makes one token per requested piece, no read-ahead) and cancelling it closes the
 * generator; its signals come on virtual threads. Each subscription generates anew.
 * {@link #call} waits for the whole text. Both answer with one {@link Generation}, whose
 * {@link ChatGenerationMetadata#getFinishReason()} is the model's own: {@code "stop"} (its
 * end-of-sequence token or a stop sequence) or {@code "length"} ({@code maxTokens}, or the end of
 * the model's context), with a {@link ChatResponseMetadata} that names the model (its entry's name)
 * and counts the prompt's tokens (the chat template's, special tokens included) and the generated
 * ones (an end-of-sequence token included).
 *
 * <p>It does not own the model: closing the context closes the model bean once (this has nothing
 * to close), after which a call fails with the model's {@link IllegalStateException}. The model's
 * health and meters are the model bean's, under its name.
 */
public final class TransformersChatModel implements ChatModel {
    private final PythonModel model;
    private final Defaults defaults;

    /**
     * Wraps a model of {@link Transformers#chat}'s signature with the {@link Defaults#STANDARD} defaults.
     *
     * @param model the model, which stays its owner's
     * @throws IllegalArgumentException if the model has another signature
     */
    public TransformersChatModel(PythonModel model) {
        this(model, Defaults.STANDARD);
    }

    /**
     * Wraps a model of {@link Transformers#chat}'s signature: the text inputs
     * {@value Transformers#MESSAGES} and {@value Transformers#PARAMETERS}, the text output
     * {@value Transformers#DELTA} and the value output {@value Transformers#FINISH}.
     *
     * @param model    the model, which stays its owner's
     * @param defaults what a prompt's options do not say
     * @throws IllegalArgumentException if the model has another signature
     */
    public TransformersChatModel(PythonModel model, Defaults defaults) {
        this.model = Objects.requireNonNull(model, "model");
        this.defaults = Objects.requireNonNull(defaults, "defaults");
        if (!model.textInputs().equals(List.of(Transformers.MESSAGES, Transformers.PARAMETERS)) || !model.inputs().isEmpty()
                || !model.textOutputs().contains(Transformers.DELTA) || !model.valueOutputs().contains(Transformers.FINISH)) {
            throw new IllegalArgumentException("model " + model.name() + " has text inputs " + model.textInputs() + ", text outputs "
                    + model.textOutputs() + " and value outputs " + model.valueOutputs() + "; a chat model takes " + Transformers.MESSAGES
                    + " and " + Transformers.PARAMETERS + " and streams " + Transformers.DELTA + " and " + Transformers.FINISH
                    + " (Transformers.chat makes one)");
        }
    }

    /**
     * What a chat model generates when a prompt's options do not say.
     *
     * @param maxNewTokens the most tokens generated, at least 1
     * @param temperature  0 for greedy decoding, else the sampling temperature
     * @param topP         nucleus sampling's probability mass, more than 0 and at most 1 (1 keeps every token)
     * @param seed         the sampler's seed, for the same sampled text every time; {@code null} for a fresh one each time
     * @param stop         the stop sequences: the text ends before the first of them
     */
    public record Defaults(int maxNewTokens, double temperature, double topP, Long seed, List<String> stop) {
        /** 256 new tokens, greedy, every token kept, no seed, no stop sequences: {@link Transformers}' own. */
        public static final Defaults STANDARD = new Defaults(256, 0, 1, null, List.of());

        /**
         * Checks the defaults.
         *
         * @throws IllegalArgumentException if one is out of its range
         */
        public Defaults {
            String problem = problem("maxNewTokens", maxNewTokens, "temperature", temperature, "topP", topP);
            if (problem != null) {
                throw new IllegalArgumentException(problem);
            }
            Objects.requireNonNull(stop, "stop");
            if (stop.stream().anyMatch(Objects::isNull)) {
                throw new IllegalArgumentException("stop " + stop + " has a null stop sequence");
            }
            stop = List.copyOf(stop);
        }
    }

    /** {@return what is wrong with these generation settings, or {@code null}} */
    private static String problem(String maxName, Integer max, String temperatureName, Double temperature, String topPName, Double topP) {
        if (max != null && max < 1) {
            return maxName + " " + max + " is not 1 or more";
        }
        if (temperature != null && !(temperature >= 0 && Double.isFinite(temperature))) {
            return temperatureName + " " + temperature + " is not 0 (greedy) or more";
        }
        if (topP != null && !(topP > 0 && topP <= 1)) {
            return topPName + " " + topP + " is not more than 0 and at most 1";
        }
        return null;
    }

    /**
     * Generates the answer to a prompt and waits for it.
     *
     * @param prompt the messages, and options that override the defaults
     * @return one generation: the text, with the finish reason; the model's name and the token usage
     * @throws IllegalArgumentException if the prompt asks for what the model cannot do, or an option is out of range
     * @throws IllegalStateException    if the model is closed
     * @throws CancellationException    if the thread was interrupted while it waited (the generation is cancelled)
     * @throws io.github.dlpack4j.model.ModelOverloadedException if the model has too many streams open
     * @throws io.github.dlpack4j.model.ModelTimeoutException    if the model's first-token or stream deadline passed
     * @throws io.github.dlpack4j.python.PythonException        if the model raised
     */
    @Override
    public ChatResponse call(Prompt prompt) {
        CompletableFuture<List<Piece>> answer = pieces(inputs(prompt)).collectList().toFuture();
        List<Piece> pieces;
        try {
            pieces = answer.get();
        } catch (InterruptedException e) {
            answer.cancel(true); // cancels the stream, which closes the generator
            Thread.currentThread().interrupt();
            throw new CancellationException("interrupted while model " + model.name() + " generated");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            if (e.getCause() instanceof Error err) {
                throw err;
            }
            throw new IllegalStateException(e.getCause());
        }
        StringBuilder text = new StringBuilder();
        pieces.forEach(p -> text.append(p.delta()));
        return response(text.toString(), pieces.isEmpty() ? null : pieces.getLast().finish());
    }

    /**
     * Streams the answer to a prompt as it is decoded; each subscription generates it anew.
     *
     * @param prompt the messages, and options that override the defaults
     * @return a response per piece of new text, then one with {@code ""}, the finish reason and the
     *         token usage; what {@link #call} throws comes as the error, the prompt's refusal at the subscription
     */
    @Override
    public Flux<ChatResponse> stream(Prompt prompt) {
        return Flux.defer(() -> pieces(inputs(prompt))).map(p -> response(p.delta(), p.finish()));
    }

    /** One item of the model's stream: its new text, and the last one's finish value. */
    private record Piece(String delta, Map<?, ?> finish) {
    }

    /** {@return the model's stream on these inputs, each item closed once read; made at each subscription} */
    private Flux<Piece> pieces(Map<String, String> inputs) {
        return Flux.defer(() -> JdkFlowAdapter.flowPublisherToFlux(model.stream(inputs))).handle((item, sink) -> {
            try (ModelResult r = item) {
                Map<?, ?> finish = r.names().contains(Transformers.FINISH) ? (Map<?, ?>) r.value(Transformers.FINISH) : null;
                String delta = r.names().contains(Transformers.DELTA) ? r.text(Transformers.DELTA) : "";
                if (finish != null || !delta.isEmpty()) {
                    sink.next(new Piece(delta, finish));
                }
            }
        });
    }

    private ChatResponse response(String text, Map<?, ?> finish) {
        ChatGenerationMetadata generation = ChatGenerationMetadata.NULL;
        Usage usage = new EmptyUsage();
        if (finish != null) {
            generation = ChatGenerationMetadata.builder().finishReason(String.valueOf(finish.get("finish_reason"))).build();
            if (finish.get("prompt_tokens") instanceof Number prompt && finish.get("completion_tokens") instanceof Number completion) {
                usage = new DefaultUsage(Math.toIntExact(prompt.longValue()), Math.toIntExact(completion.longValue()));
            }
        }
        ChatResponseMetadata metadata = ChatResponseMetadata.builder().model(model.name()).usage(usage).build();
        return new ChatResponse(List.of(new Generation(new AssistantMessage(text), generation)), metadata);
    }

    /** {@return the chat model's inputs for a prompt}: what the model cannot do is refused before Python runs */
    private Map<String, String> inputs(Prompt prompt) {
        Objects.requireNonNull(prompt, "prompt");
        StringBuilder messages = new StringBuilder("[");
        for (Message m : prompt.getInstructions()) {
            String role = switch (m.getMessageType()) {
                case SYSTEM -> "system";
                case USER -> "user";
                case ASSISTANT -> "assistant";
                case TOOL -> throw refused("takes system, user and assistant messages, not " + m.getMessageType() + " messages");
            };
            if (m instanceof UserMessage u && u.getMedia() != null && !u.getMedia().isEmpty()) {
                throw refused("takes text messages only; a user message has " + u.getMedia().size() + " media");
            }
            if (m instanceof AssistantMessage a) {
                if (a.hasToolCalls()) {
                    throw refused("runs no tools; an assistant message has tool calls");
                }
                if (a.getMedia() != null && !a.getMedia().isEmpty()) {
                    throw refused("takes text messages only; an assistant message has " + a.getMedia().size() + " media");
                }
            }
            messages.append(messages.length() > 1 ? ", " : "").append("{\"role\": \"").append(role).append("\", \"content\": ")
                    .append(Transformers.jsonString(Objects.requireNonNullElse(m.getText(), ""))).append('}');
        }
        messages.append(']');
        ChatOptions o = prompt.getOptions();
        Integer max = null;
        Double temperature = null;
        Double topP = null;
        List<String> stop = null;
        if (o != null) {
            unsupported("topK", o.getTopK());
            unsupported("frequencyPenalty", o.getFrequencyPenalty());
            unsupported("presencePenalty", o.getPresencePenalty());
            if (o instanceof ToolCallingChatOptions t && t.getToolCallbacks() != null && !t.getToolCallbacks().isEmpty()) {
                throw refused("runs no tools; the options have " + t.getToolCallbacks().size() + " tool callbacks");
            }
            if (o instanceof StructuredOutputChatOptions s && s.getOutputSchema() != null) {
                throw refused("has no structured output; the options have an output schema");
            }
            String problem = problem("maxTokens", o.getMaxTokens(), "temperature", o.getTemperature(), "topP", o.getTopP());
            if (problem != null) {
                throw new IllegalArgumentException("model " + model.name() + ": " + problem);
            }
            max = o.getMaxTokens();
            temperature = o.getTemperature();
            topP = o.getTopP();
            if (o.getStopSequences() != null && !o.getStopSequences().isEmpty()) {
                if (o.getStopSequences().stream().anyMatch(Objects::isNull)) {
                    throw new IllegalArgumentException("model " + model.name() + ": stopSequences " + o.getStopSequences()
                            + " has a null stop sequence");
                }
                stop = o.getStopSequences();
            }
        }
        StringBuilder p = new StringBuilder("{\"max_new_tokens\": ").append(max != null ? max : defaults.maxNewTokens())
                .append(", \"temperature\": ").append(temperature != null ? temperature : defaults.temperature())
                .append(", \"top_p\": ").append(topP != null ? topP : defaults.topP())
                .append(", \"seed\": ").append(defaults.seed())
                .append(", \"stop\": [");
        List<String> stops = stop != null ? stop : defaults.stop();
        for (int i = 0; i < stops.size(); i++) {
            p.append(i > 0 ? ", " : "").append(Transformers.jsonString(stops.get(i)));
        }
        p.append("]}");
        return Map.of(Transformers.MESSAGES, messages.toString(), Transformers.PARAMETERS, p.toString());
    }

    private void unsupported(String option, Object value) {
        if (value != null) {
            throw refused("samples with temperature and topP, up to maxTokens and stopSequences; not " + option + " (" + value + ")");
        }
    }

    private IllegalArgumentException refused(String why) {
        return new IllegalArgumentException("model " + model.name() + " " + why);
    }

    /**
     * {@return the defaults as Spring AI's options: the model's name, {@code maxTokens},
     * {@code temperature}, {@code topP} and {@code stopSequences} (the seed has no option of its own)}
     */
    @Override
    public ChatOptions getOptions() {
        return ChatOptions.builder().model(model.name()).maxTokens(defaults.maxNewTokens()).temperature(defaults.temperature())
                .topP(defaults.topP()).stopSequences(new ArrayList<>(defaults.stop())).build();
    }

    /** {@return the model it runs: its name, stats and queue} */
    public PythonModel model() {
        return model;
    }

    /** {@return what it generates when a prompt's options do not say} */
    public Defaults defaults() {
        return defaults;
    }

    @Override
    public String toString() {
        return "TransformersChatModel[" + model.name() + ", " + defaults + "]";
    }
}
