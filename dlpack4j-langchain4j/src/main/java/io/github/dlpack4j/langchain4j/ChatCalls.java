package io.github.dlpack4j.langchain4j;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Flow;
import java.util.function.Consumer;

import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.exception.UnsupportedFeatureException;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.TokenUsage;
import io.github.dlpack4j.model.ModelResult;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.Transformers;

/**
 * What {@link PythonChatModel} and {@link PythonStreamingChatModel} share: a LangChain4j chat
 * request as the chat model's inputs ({@link Transformers}' {@code messages} and
 * {@code parameters} JSON), the stream's items as text and a {@link ChatResponse}.
 */
final class ChatCalls {
    private final PythonModel model;
    private final ChatDefaults defaults;

    ChatCalls(PythonModel model, ChatDefaults defaults) {
        if (!model.textInputs().equals(List.of(Transformers.MESSAGES, Transformers.PARAMETERS))
                || !model.textOutputs().contains(Transformers.DELTA)) {
            throw new IllegalArgumentException("model " + model.name() + " has text inputs " + model.textInputs()
                    + " and text outputs " + model.textOutputs() + "; a chat model takes " + Transformers.MESSAGES + " and "
                    + Transformers.PARAMETERS + " and streams " + Transformers.DELTA + " (Transformers.chat makes one)");
        }
        this.model = model;
        this.defaults = defaults;
    }

    PythonModel model() {
        return model;
    }

    /** {@return the chat model's inputs for a request}: unsupported features refused before Python runs */
    Map<String, String> inputs(ChatRequest request) {
        if (request.toolSpecifications() != null && !request.toolSpecifications().isEmpty()) {
            throw new UnsupportedFeatureException("model " + model.name() + " runs no tools");
        }
        if (request.responseFormat() != null && request.responseFormat().jsonSchema() != null) {
            throw new UnsupportedFeatureException("model " + model.name() + " has no structured output (a JSON schema)");
        }
        if (request.topK() != null || request.frequencyPenalty() != null || request.presencePenalty() != null) {
            throw new UnsupportedFeatureException("model " + model.name() + " takes temperature, top-p, the most output "
                    + "tokens and stop sequences; not top-k or penalties");
        }
        StringBuilder messages = new StringBuilder("[");
        for (ChatMessage m : request.messages()) {
            if (messages.length() > 1) {
                messages.append(", ");
            }
            String role;
            String text;
            switch (m) {
                case SystemMessage s -> {
                    role = "system";
                    text = s.text();
                }
                case UserMessage u -> {
                    if (!u.hasSingleText()) {
                        throw new UnsupportedFeatureException("model " + model.name() + " takes text messages only");
                    }
                    role = "user";
                    text = u.singleText();
                }
                case AiMessage a -> {
                    role = "assistant";
                    text = a.text() == null ? "" : a.text();
                }
                default -> throw new UnsupportedFeatureException("model " + model.name() + " takes system, user and AI "
                        + "messages, not " + m.type());
            }
            messages.append("{\"role\": ").append(Transformers.jsonString(role))
                    .append(", \"content\": ").append(Transformers.jsonString(text)).append('}');
        }
        messages.append(']');
        Double temperature = request.temperature() != null ? request.temperature() : defaults.temperature();
        Double topP = request.topP() != null ? request.topP() : defaults.topP();
        Integer max = request.maxOutputTokens() != null ? request.maxOutputTokens() : defaults.maxNewTokens();
        List<String> stop = request.stopSequences() != null && !request.stopSequences().isEmpty()
                ? request.stopSequences() : defaults.stop();
        StringBuilder p = new StringBuilder("{\"max_new_tokens\": ").append(max)
                .append(", \"temperature\": ").append(temperature)
                .append(", \"top_p\": ").append(topP)
                .append(", \"seed\": ").append(defaults.seed() == null ? "null" : defaults.seed().toString())
                .append(", \"stop\": [");
        for (int i = 0; i < stop.size(); i++) {
            p.append(i > 0 ? ", " : "").append(Transformers.jsonString(stop.get(i)));
        }
        p.append("]}");
        return Map.of(Transformers.MESSAGES, messages.toString(), Transformers.PARAMETERS, p.toString());
    }

    /**
     * Streams a request: {@code delta} gets each piece of text, {@code done} the response once the
     * model finished, {@code failed} its error.
     */
    void stream(ChatRequest request, Consumer<Flow.Subscription> subscribed, Consumer<String> delta,
                Consumer<ChatResponse> done, Consumer<Throwable> failed) {
        Map<String, String> inputs = inputs(request);
        model.stream(inputs).subscribe(new Flow.Subscriber<>() {
            private final StringBuilder text = new StringBuilder();
            private Map<?, ?> finish;

            @Override
            public void onSubscribe(Flow.Subscription s) {
                subscribed.accept(s);
                s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(ModelResult item) {
                try (item) {
                    if (item.names().contains(Transformers.FINISH)) {
                        finish = (Map<?, ?>) item.value(Transformers.FINISH);
                    }
                    String d = item.names().contains(Transformers.DELTA) ? item.text(Transformers.DELTA) : "";
                    if (!d.isEmpty()) {
                        text.append(d);
                        delta.accept(d);
                    }
                }
            }

            @Override
            public void onError(Throwable e) {
                failed.accept(e);
            }

            @Override
            public void onComplete() {
                done.accept(response(text.toString(), finish));
            }
        });
    }

    private ChatResponse response(String text, Map<?, ?> finish) {
        ChatResponse.Builder b = ChatResponse.builder().aiMessage(AiMessage.from(text)).modelName(model.name());
        if (finish != null) {
            Object reason = finish.get("finish_reason");
            b.finishReason("length".equals(reason) ? FinishReason.LENGTH : "stop".equals(reason) ? FinishReason.STOP
                    : FinishReason.OTHER);
            if (finish.get("prompt_tokens") instanceof Long prompt && finish.get("completion_tokens") instanceof Long done) {
                b.tokenUsage(new TokenUsage(Math.toIntExact(prompt), Math.toIntExact(done)));
            }
        }
        return b.build();
    }

    /**
     * The defaults of a chat model's generation, where a request does not say.
     *
     * @param maxNewTokens the most tokens generated
     * @param temperature  0 for greedy decoding
     * @param topP         nucleus sampling's mass
     * @param seed         the sampler's seed, or null for none
     * @param stop         the stop strings
     */
    record ChatDefaults(int maxNewTokens, double temperature, double topP, Long seed, List<String> stop) {
        ChatDefaults {
            stop = List.copyOf(new ArrayList<>(stop));
        }
    }
}
