package example.serve.protocol;

import static example.serve.protocol.OpenAiError.invalid;

import example.serve.protocol.InferenceProtocol.Answer;
import example.serve.protocol.InferenceProtocol.Responder;
import io.github.dlpack4j.model.ModelOverloadedException;
import io.github.dlpack4j.model.ModelResult;
import io.github.dlpack4j.model.ModelTimeoutException;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.Transformers;
import io.github.dlpack4j.python.PythonException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * OpenAI's chat completions endpoint, {@code POST /v1/chat/completions}, without a web framework,
 * over a streaming chat model ({@link Transformers#chat}): one {@link PythonModel#stream} a request,
 * its items asked for one at a time. Without {@code stream} the reply is one JSON answer,
 * {@code {"id": "chatcmpl-…", "object": "chat.completion", "created", "model", "choices": [{"index": 0,
 * "message": {"role": "assistant", "content"}, "logprobs": null, "finish_reason"}], "usage"}}; with
 * {@code "stream": true} it is server-sent events, one {@code chat.completion.chunk} a piece of text
 * (the first with the role), one with the finish reason, a usage chunk if
 * {@code stream_options.include_usage}, then {@code data: [DONE]}.
 *
 * <p><b>Back-pressure.</b> The next item is asked of the model only once the previous chunk was
 * written and flushed: a client that reads slowly slows its own generation and nobody else's.
 * <b>A client that goes away</b> makes a write fail; the subscription is then cancelled, which
 * closes the generator and frees its place in the model. The status and headers go out with the
 * first item, so that what fails before it (a full model, the first-token deadline, a prompt too
 * long for the context) still has its status: 400 for a bad request, 404 for another model's name,
 * 429 when the model has no room for another stream, 500 when it raised, 503 while the service
 * drains, 504 past the deadline, each as OpenAI's error object. What fails after that ends the
 * stream with an event {@code data: {"error": {…}}} and no {@code [DONE]}.
 */
public final class OpenAiChat {
    /** The content type of a streamed reply. */
    public static final String EVENT_STREAM = "text/event-stream";

    private static final Logger LOG = Logger.getLogger(OpenAiChat.class.getName());
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);

    private final PythonModel model;
    private final InferenceProtocol service;

    /** Opens a streamed reply the web framework's way. */
    @FunctionalInterface
    public interface EventStream {
        /**
         * Sends status 200 with {@code Content-Type: text/event-stream} and no cache.
         *
         * @return the body, to which each event is written and flushed; closed at the end
         * @throws UncheckedIOException if the client went away
         */
        OutputStream open();
    }

    /**
     * @param model   the chat model, as {@link Transformers#chat} builds it; the request's {@code model}
     *                must be its name
     * @param service the service's v2 endpoints, whose body limit, draining and counters these
     *                requests share
     */
    public OpenAiChat(PythonModel model, InferenceProtocol service) {
        this.model = model;
        this.service = service;
    }

    /**
     * Answers {@code POST /v1/chat/completions}: reads and checks the request, streams the model's
     * reply, and sends it as one answer or as events; returns once the reply is sent, failed, or its
     * client went away.
     *
     * @param contentLength the body's declared length, or -1 when the request does not declare it
     * @param body          the body
     * @param responder     sends a whole answer (a reply without {@code stream}, or an error before the first item)
     * @param events        opens a streamed reply
     */
    public void completions(long contentLength, InputStream body, Responder responder, EventStream events) {
        if (!service.serve(() -> answer(contentLength, body, responder, events))) {
            send(responder, new OpenAiError(503, "service_unavailable_error", null, null,
                    "the service is shutting down").answer());
        }
    }

    private void answer(long contentLength, InputStream body, Responder responder, EventStream events) {
        ChatRequest request;
        Flow.Publisher<ModelResult> publisher;
        try {
            byte[] bytes = service.readBody(contentLength, body);
            if (bytes == null) {
                return;   // the client went away while sending
            }
            request = ChatRequest.parse(bytes);
            if (!request.model().equals(model.name())) {
                throw new OpenAiError(404, "invalid_request_error", "model", "model_not_found", "the model '"
                        + request.model() + "' does not exist: this service serves '" + model.name() + "'");
            }
            publisher = stream(request);
        } catch (ProtocolException e) {   // the body is over the service's limit
            fail(responder, invalid(null, e.getMessage()));
            return;
        } catch (OpenAiError e) {
            fail(responder, e);
            return;
        }
        Reply reply = new Reply();
        publisher.subscribe(reply);
        try {
            if (request.stream()) {
                streamed(request, reply, responder, events);
            } else {
                whole(request, reply, responder);
            }
        } catch (InterruptedException e) {   // the service stopping
            Thread.currentThread().interrupt();
        } finally {
            reply.cancel();   // a no-op once the stream ended
        }
    }

    /** {@return the model's stream for the request} (not yet subscribed); what it refuses at once as OpenAI errors */
    private Flow.Publisher<ModelResult> stream(ChatRequest request) {
        try {
            return model.stream(Map.of(Transformers.MESSAGES, request.messagesJson(),
                    Transformers.PARAMETERS, request.parametersJson()));
        } catch (IllegalArgumentException e) {   // a text the model cannot take (a lone surrogate)
            throw invalid("messages", e.getMessage());
        } catch (IllegalStateException e) {   // closed: the service stopping
            throw new OpenAiError(503, "service_unavailable_error", null, null, e.getMessage());
        }
    }

    /** Gathers the whole reply and sends it as one answer. */
    private void whole(ChatRequest request, Reply reply, Responder responder) throws InterruptedException {
        StringBuilder content = new StringBuilder();
        Map<?, ?> finish = null;
        boolean started = false;
        for (Object signal = reply.next(); signal != Reply.COMPLETE; signal = reply.next()) {
            if (signal instanceof Reply.Failure(Throwable e)) {
                fail(responder, error(e, started));
                return;
            }
            started = true;
            try (ModelResult item = (ModelResult) signal) {
                content.append(item.text(Transformers.DELTA));
                finish = finish(item, finish);
            }
            reply.more();
        }
        String json = "{\"id\":" + InferenceProtocol.quote(reply.id) + ",\"object\":\"chat.completion\",\"created\":"
                + reply.created + ",\"model\":" + InferenceProtocol.quote(model.name())
                + ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
                + InferenceProtocol.quote(content.toString()) + "},\"logprobs\":null,\"finish_reason\":"
                + finishReason(finish) + "}],\"usage\":" + usage(finish) + "}";
        send(responder, Answer.json(200, json));
    }

    /** Writes each item as a chunk as it comes, asking for the next only once it is written. */
    private void streamed(ChatRequest request, Reply reply, Responder responder, EventStream events)
            throws InterruptedException {
        OutputStream out = null;
        Map<?, ?> finish = null;
        String usageField = request.includeUsage() ? ",\"usage\":null" : "";
        try {
            for (Object signal = reply.next(); signal != Reply.COMPLETE; signal = reply.next()) {
                if (signal instanceof Reply.Failure(Throwable e)) {
                    OpenAiError error = error(e, out != null);
                    if (out == null) {
                        fail(responder, error);
                    } else {
                        write(out, new String(error.answer().body(), StandardCharsets.UTF_8));
                        out.close();
                    }
                    return;
                }
                String delta;
                try (ModelResult item = (ModelResult) signal) {
                    delta = item.text(Transformers.DELTA);
                    finish = finish(item, finish);
                }
                if (out == null) {
                    out = events.open();
                    write(out, chunk(reply, "{\"role\":\"assistant\",\"content\":\"\"}", "null", usageField));
                }
                if (!delta.isEmpty()) {
                    write(out, chunk(reply, "{\"content\":" + InferenceProtocol.quote(delta) + "}", "null", usageField));
                }
                reply.more();
            }
            if (out == null) {   // a stream without items: the model broke its contract
                send(responder, new OpenAiError(500, "server_error", null, null, "the model ended without a reply").answer());
                return;
            }
            write(out, chunk(reply, "{}", finishReason(finish), usageField));
            if (request.includeUsage()) {
                write(out, "{\"id\":" + InferenceProtocol.quote(reply.id)
                        + ",\"object\":\"chat.completion.chunk\",\"created\":" + reply.created + ",\"model\":"
                        + InferenceProtocol.quote(model.name()) + ",\"choices\":[],\"usage\":" + usage(finish) + "}");
            }
            out.write(DONE);
            out.flush();
            out.close();
        } catch (IOException | UncheckedIOException gone) {
            reply.cancel();   // frees the model's place now, not at the next token
            service.countClientGone();
            LOG.log(Level.FINE, "a client went away during its stream", gone);
        }
    }

    private String chunk(Reply reply, String delta, String finishReason, String usageField) {
        return "{\"id\":" + InferenceProtocol.quote(reply.id) + ",\"object\":\"chat.completion.chunk\",\"created\":"
                + reply.created + ",\"model\":" + InferenceProtocol.quote(model.name())
                + ",\"choices\":[{\"index\":0,\"delta\":" + delta + ",\"logprobs\":null,\"finish_reason\":"
                + finishReason + "}]" + usageField + "}";
    }

    /** Writes one event and flushes it to the client. */
    private static void write(OutputStream out, String json) throws IOException {
        out.write(("data: " + json + "\n\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    private static Map<?, ?> finish(ModelResult item, Map<?, ?> before) {
        return item.names().contains(Transformers.FINISH) ? (Map<?, ?>) item.value(Transformers.FINISH) : before;
    }

    private static String finishReason(Map<?, ?> finish) {
        return finish == null ? "null" : InferenceProtocol.quote(String.valueOf(finish.get("finish_reason")));
    }

    private static String usage(Map<?, ?> finish) {
        long prompt = finish == null ? 0 : ((Number) finish.get("prompt_tokens")).longValue();
        long completion = finish == null ? 0 : ((Number) finish.get("completion_tokens")).longValue();
        return "{\"prompt_tokens\":" + prompt + ",\"completion_tokens\":" + completion + ",\"total_tokens\":"
                + (prompt + completion) + "}";
    }

    /**
     * {@return the stream's failure as an OpenAI error}: a {@code ValueError} before the first item
     * is the chat model refusing its input (the prompt fills the context), so a 400.
     */
    private static OpenAiError error(Throwable e, boolean started) {
        return switch (e) {
            case ModelOverloadedException o -> new OpenAiError(429, "rate_limit_error", null, null, o.getMessage());
            case ModelTimeoutException t -> new OpenAiError(504, "server_error", null, null, t.getMessage());
            case PythonException p when !started && p.pythonType().equals("ValueError") ->
                    invalid("messages", p.pythonMessage());
            case PythonException p -> new OpenAiError(500, "server_error", null, null,
                    "the model raised " + p.pythonType() + ": " + p.pythonMessage());
            case CancellationException c -> new OpenAiError(503, "service_unavailable_error", null, null, "interrupted");
            case IllegalStateException s -> new OpenAiError(503, "service_unavailable_error", null, null, s.getMessage());
            default -> new OpenAiError(500, "server_error", null, null, "the model failed: " + e.getMessage());
        };
    }

    /** Sends an error answer; a 400 counts as a bad request. */
    private void fail(Responder responder, OpenAiError error) {
        if (error.status() == 400) {
            service.countBadRequest();
        }
        send(responder, error.answer());
    }

    private void send(Responder responder, Answer answer) {
        try {
            responder.send(answer);
        } catch (UncheckedIOException gone) {
            service.countClientGone();
            LOG.log(Level.FINE, "a client went away before its answer", gone);
        }
    }

    /**
     * One request's subscription to its stream: the signals, which arrive on the model's virtual
     * threads, handed to the request's own thread, which writes them and then asks for the next item.
     */
    private static final class Reply implements Flow.Subscriber<ModelResult> {
        static final Object COMPLETE = new Object();

        record Failure(Throwable error) {}

        final String id = "chatcmpl-" + UUID.randomUUID().toString().replace("-", "");
        final long created = System.currentTimeMillis() / 1000;
        private final BlockingQueue<Object> signals = new LinkedBlockingQueue<>();
        private volatile Flow.Subscription subscription;
        private volatile boolean cancelled;

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            if (cancelled) {
                s.cancel();
            } else {
                s.request(1);
            }
        }

        @Override
        public synchronized void onNext(ModelResult item) {
            if (cancelled) {
                item.close();
            } else {
                signals.add(item);
            }
        }

        @Override
        public void onError(Throwable e) {
            signals.add(new Failure(e));
        }

        @Override
        public void onComplete() {
            signals.add(COMPLETE);
        }

        /** {@return the next signal: an item (the caller closes it), a {@link Failure}, or {@link #COMPLETE}} */
        Object next() throws InterruptedException {
            return signals.take();
        }

        /** Asks for the next item. */
        void more() {
            subscription.request(1);
        }

        /** Cancels the stream (its generator closes) and closes an item that came meanwhile. */
        void cancel() {
            cancelled = true;
            Flow.Subscription s = subscription;
            if (s != null) {
                s.cancel();
            }
            synchronized (this) {   // against an item being added as the stream is cancelled
                drain();
            }
        }

        private void drain() {
            for (Object left = signals.poll(); left != null; left = signals.poll()) {
                if (left instanceof ModelResult item) {
                    item.close();
                }
            }
        }
    }
}
