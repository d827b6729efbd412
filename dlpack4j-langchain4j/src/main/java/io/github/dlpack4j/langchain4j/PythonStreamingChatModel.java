package io.github.dlpack4j.langchain4j;

import java.nio.file.Path;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.chat.response.StreamingHandle;
import io.github.dlpack4j.model.PythonModel;

/**
 * A transformers causal language model as LangChain4j's {@link StreamingChatModel}: the text reaches
 * the handler's {@code onPartialResponse} as it is decoded (never part of a character), then
 * {@code onCompleteResponse} with the whole answer, its token usage and finish reason, or
 * {@code onError}. The handler's {@code StreamingHandle} ({@code PartialResponseContext}) cancels the
 * generation: the model stops at its next token and frees its place. The generation settings are
 * {@link PythonChatModel}'s ({@link PythonChatModel.Builder}).
 *
 * {@snippet :
 * try (PythonStreamingChatModel chat = PythonStreamingChatModel.transformers(Path.of("tiny-lm"))) {
 *     chat.chat("Hello!", handler);
 * }
 * }
 */
public final class PythonStreamingChatModel implements StreamingChatModel, AutoCloseable {
    private final ChatCalls calls;
    private final boolean owned;

    PythonStreamingChatModel(ChatCalls calls, boolean owned) {
        this.calls = calls;
        this.owned = owned;
    }

    /**
     * {@return a streaming chat model over a causal language model's directory, with the default
     * generation settings} For other settings: {@code PythonChatModel.transformers(dir)...buildStreaming()}.
     *
     * @param dir the model's directory, with its tokenizer and chat template
     * @throws io.github.dlpack4j.python.PythonException if transformers cannot load the directory
     */
    public static PythonStreamingChatModel transformers(Path dir) {
        return PythonChatModel.transformers(dir).buildStreaming();
    }

    /**
     * Wraps a streaming chat {@link PythonModel} ({@code Transformers.chat}'s signature), with
     * default generation settings; the model stays the caller's.
     *
     * @param model the model
     * @return the streaming chat model
     * @throws IllegalArgumentException if the model's signature is not a chat model's
     */
    public static PythonStreamingChatModel of(PythonModel model) {
        return new PythonStreamingChatModel(new ChatCalls(model, PythonChatModel.Builder.DEFAULTS), false);
    }

    /**
     * Streams the answer to a request to the handler; returns at once.
     *
     * @param request the messages and parameters
     * @param handler gets the pieces of text, then the response or the error
     * @throws dev.langchain4j.exception.UnsupportedFeatureException if it asks for tools, a schema,
     *                                                               top-k or penalties
     */
    @Override
    public void doChat(ChatRequest request, StreamingChatResponseHandler handler) {
        AtomicReference<Flow.Subscription> subscription = new AtomicReference<>();
        AtomicBoolean cancelled = new AtomicBoolean();
        StreamingHandle handle = new StreamingHandle() {
            @Override
            public void cancel() {
                if (cancelled.compareAndSet(false, true)) {
                    Flow.Subscription s = subscription.get();
                    if (s != null) {
                        s.cancel();
                    }
                }
            }

            @Override
            public boolean isCancelled() {
                return cancelled.get();
            }
        };
        PartialResponseContext context = new PartialResponseContext(handle);
        calls.stream(request, s -> {
            subscription.set(s);
            if (cancelled.get()) {
                s.cancel();
            }
        }, d -> handler.onPartialResponse(new PartialResponse(d), context), handler::onCompleteResponse, handler::onError);
    }

    /** {@return the model it runs: its stats, its queue} */
    public PythonModel model() {
        return calls.model();
    }

    /** Closes the model it made; a model given to {@link #of}, or one of a {@link PythonChatModel}, stays open. */
    @Override
    public void close() {
        if (owned) {
            calls.model().close();
        }
    }

    @Override
    public String toString() {
        return "PythonStreamingChatModel[" + calls.model().name() + "]";
    }
}
