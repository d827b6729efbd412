package example.serve;

import example.serve.protocol.InferenceProtocol;
import example.serve.protocol.InferenceProtocol.Answer;
import example.serve.protocol.OpenAiChat;
import example.serve.protocol.OpenAiEmbeddings;
import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The Open Inference Protocol (KServe v2) endpoints on Helidon SE's routing, and OpenAI's
 * {@code POST /v1/embeddings} when an embedding model is served, or {@code POST /v1/chat/completions}
 * when a chat model is, its handlers on virtual threads: each hands what it read from the request to
 * {@link InferenceProtocol} (shared with the Spring Boot example), {@link OpenAiEmbeddings} or
 * {@link OpenAiChat}, which checks it, calls the model and makes the answer, and sends that answer
 * (a chat's events written to the response's stream, flushed one by one).
 */
final class InferenceService {
    private static final HeaderName INFERENCE_HEADER_CONTENT_LENGTH =
            HeaderNames.create(InferenceProtocol.INFERENCE_HEADER_CONTENT_LENGTH);
    private static final Logger LOG = Logger.getLogger(InferenceService.class.getName());

    private final InferenceProtocol protocol;
    private final OpenAiEmbeddings embeddings;
    private final OpenAiChat chat;

    /**
     * @param protocol   the v2 endpoints' answers
     * @param embeddings the embeddings endpoint's, or null when no embedding model is served (then
     *                   {@code POST /v1/embeddings} is no endpoint: 404)
     * @param chat       the chat completions endpoint's, or null when no chat model is served (then
     *                   {@code POST /v1/chat/completions} is no endpoint: 404)
     */
    InferenceService(InferenceProtocol protocol, OpenAiEmbeddings embeddings, OpenAiChat chat) {
        this.protocol = protocol;
        this.embeddings = embeddings;
        this.chat = chat;
    }

    /** Adds the endpoints to {@code routing}. */
    void routing(HttpRouting.Builder routing) {
        routing.get("/v2/health/live", (req, res) -> send(res, protocol.live()))
                .get("/v2/health/ready", (req, res) -> send(res, protocol.ready()))
                .get("/v2", (req, res) -> send(res, protocol.serverMetadata()))
                .get("/v2/models/{name}", (req, res) -> send(res, protocol.modelMetadata(name(req))))
                .get("/v2/models/{name}/ready", (req, res) -> send(res, protocol.modelReady(name(req))))
                .post("/v2/models/{name}/infer", this::infer)
                .get("/admin/stats", (req, res) -> send(res, protocol.stats()));
        if (embeddings != null) {
            routing.post("/v1/embeddings", (req, res) -> embeddings.embeddings(req.headers().contentLength().orElse(-1),
                    req.content().inputStream(), answer -> write(res, answer)));
        }
        if (chat != null) {
            routing.post("/v1/chat/completions", (req, res) -> chat.completions(req.headers().contentLength().orElse(-1),
                    req.content().inputStream(), answer -> write(res, answer), () -> events(res)));
        }
        routing.any((req, res) -> send(res, protocol.noEndpoint(req.prologue().method().text(), req.path().path())));
    }

    private static String name(ServerRequest req) {
        return req.path().pathParameters().get("name");
    }

    private void infer(ServerRequest req, ServerResponse res) {
        String headerLength = req.headers().contains(INFERENCE_HEADER_CONTENT_LENGTH)
                ? req.headers().get(INFERENCE_HEADER_CONTENT_LENGTH).get() : null;
        protocol.infer(name(req), req.headers().contentLength().orElse(-1), req.content().inputStream(), headerLength,
                answer -> write(res, answer));
    }

    /** {@return the body of a streamed answer, its status and headers sent}: each flush sends what was written as a chunk */
    private static OutputStream events(ServerResponse res) {
        res.status(200);
        res.header(HeaderNames.CONTENT_TYPE, OpenAiChat.EVENT_STREAM);
        res.header(HeaderNames.CACHE_CONTROL, "no-cache");
        return new ClientStream(res.outputStream());
    }

    /**
     * Helidon's response stream with its failures to write, the client gone (Helidon's unchecked
     * socket exceptions), as the {@link IOException}s of {@link OutputStream}'s contract, which is
     * what {@link OpenAiChat} takes for a client that went away.
     */
    private static final class ClientStream extends FilterOutputStream {
        ClientStream(OutputStream out) {
            super(out);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            try {
                out.write(b, off, len);
            } catch (RuntimeException e) {
                throw new IOException("the client went away", e);
            }
        }

        @Override
        public void flush() throws IOException {
            try {
                out.flush();
            } catch (RuntimeException e) {
                throw new IOException("the client went away", e);
            }
        }

        @Override
        public void close() throws IOException {
            try {
                out.close();
            } catch (RuntimeException e) {
                throw new IOException("the client went away", e);
            }
        }
    }

    /** Sends an answer of an endpoint other than inference; a client gone before it is logged. */
    private static void send(ServerResponse res, Answer answer) {
        try {
            write(res, answer);
        } catch (UncheckedIOException gone) {
            LOG.log(Level.FINE, "a client went away before its answer", gone);
        }
    }

    /**
     * Writes an answer: status, content type, the binary data's header, body.
     *
     * @throws UncheckedIOException if the client went away
     */
    private static void write(ServerResponse res, Answer answer) {
        res.status(answer.status());
        if (answer.contentType() != null) {
            res.header(HeaderNames.CONTENT_TYPE, answer.contentType());
        }
        if (answer.jsonLength() >= 0) {
            res.header(INFERENCE_HEADER_CONTENT_LENGTH, Integer.toString(answer.jsonLength()));
        }
        res.send(answer.body());
    }
}
