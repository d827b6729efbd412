package example.serve.protocol;

import static example.serve.protocol.OpenAiError.invalid;

import example.serve.protocol.InferenceProtocol.Answer;
import example.serve.protocol.InferenceProtocol.Responder;
import io.github.dlpack4j.model.ModelOverloadedException;
import io.github.dlpack4j.model.ModelResult;
import io.github.dlpack4j.model.ModelTimeoutException;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.SentenceTransformers;
import io.github.dlpack4j.python.PythonException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * OpenAI's embeddings endpoint, {@code POST /v1/embeddings}, without a web framework, over a
 * {@link SentenceTransformers} embedding model: the request's texts in one
 * {@link PythonModel#run(Map)} call (batched with other requests' by the model when it batches),
 * answered as OpenAI answers, {@code {"object": "list", "data": [{"object": "embedding", "index",
 * "embedding"}], "model", "usage": {"prompt_tokens", "total_tokens"}}}, the tokens being the model's
 * own count (special tokens included, after truncation to its {@code max_seq_length}). Errors are
 * OpenAI's error object: 400 for a bad request, 404 for another model's name, 429 when the model's
 * queue is full, 500 when it raised, 503 while the service drains, 504 past its deadline. The
 * service's own ({@link InferenceProtocol}) body limit, draining, in-flight count and counters
 * apply.
 */
public final class OpenAiEmbeddings {
    private static final Logger LOG = Logger.getLogger(OpenAiEmbeddings.class.getName());

    private final PythonModel model;
    private final InferenceProtocol service;
    private final long dimension;

    /**
     * @param model   the embedding model, as {@link SentenceTransformers#embeddings} builds it; the
     *                request's {@code model} must be its name
     * @param service the service's v2 endpoints, whose body limit, draining and counters these
     *                requests share
     */
    public OpenAiEmbeddings(PythonModel model, InferenceProtocol service) {
        this.model = model;
        this.service = service;
        this.dimension = model.outputs().getFirst().shape()[1];
    }

    /**
     * Answers {@code POST /v1/embeddings}: reads and checks the request, calls the model, and sends
     * the embeddings or an error object; sends nothing when the client went away before its body
     * was in.
     *
     * @param contentLength the body's declared length, or -1 when the request does not declare it
     * @param body          the body
     * @param responder     sends the answer; the request counts as in flight until this returns
     */
    public void embeddings(long contentLength, InputStream body, Responder responder) {
        if (!service.serve(() -> answer(contentLength, body, responder))) {
            send(responder, new OpenAiError(503, "service_unavailable_error", null, null,
                    "the service is shutting down").answer());
        }
    }

    private void answer(long contentLength, InputStream body, Responder responder) {
        Answer answer;
        try {
            EmbeddingsRequest request;
            ModelResult result;
            // Announced before the body is read, as the v2 endpoint does: a batch being gathered
            // waits for this request (within the window) rather than run without it.
            try (PythonModel.Announcement coming = model.announce()) {
                byte[] bytes = service.readBody(contentLength, body);
                if (bytes == null) {
                    return;   // the client went away while sending: nothing was made for it
                }
                request = EmbeddingsRequest.parse(bytes);
                check(request);
                result = run(request.input());
            }
            try (result) {
                answer = answer(request, result);
            }
        } catch (ProtocolException e) {   // the body is over the service's limit
            answer = invalid(null, e.getMessage()).answer();
            service.countBadRequest();
        } catch (OpenAiError e) {
            answer = e.answer();
            if (e.status() == 400) {
                service.countBadRequest();
            }
        }
        send(responder, answer);
    }

    /** Checks what the request asks of the model: its name, and the embedding's size if given. */
    private void check(EmbeddingsRequest request) {
        if (!request.model().equals(model.name())) {
            throw new OpenAiError(404, "invalid_request_error", "model", "model_not_found", "the model '"
                    + request.model() + "' does not exist: this service serves '" + model.name() + "'");
        }
        if (request.dimensions() >= 0 && request.dimensions() != dimension) {
            throw invalid("dimensions", "model " + model.name() + " makes embeddings of " + dimension
                    + " dimensions and cannot make them of " + request.dimensions());
        }
    }

    /** {@return the model's outputs for {@code texts}, owned by the caller}; its failures as OpenAI errors */
    private ModelResult run(List<String> texts) {
        try {
            return model.run(Map.of(SentenceTransformers.TEXT, texts));
        } catch (IllegalArgumentException e) {   // a text the model cannot take (a lone surrogate)
            throw invalid("input", e.getMessage());
        } catch (ModelOverloadedException e) {
            throw new OpenAiError(429, "rate_limit_error", null, null, e.getMessage());
        } catch (ModelTimeoutException e) {
            throw new OpenAiError(504, "server_error", null, null, e.getMessage());
        } catch (PythonException e) {
            throw new OpenAiError(500, "server_error", null, null,
                    "the model raised " + e.pythonType() + ": " + e.pythonMessage());
        } catch (CancellationException e) {
            throw new OpenAiError(503, "service_unavailable_error", null, null, "interrupted");
        } catch (IllegalStateException e) {   // closed (the service stopping), or an output that broke the signature
            throw model.isClosed() ? new OpenAiError(503, "service_unavailable_error", null, null, e.getMessage())
                    : new OpenAiError(500, "server_error", null, null, "the model failed: " + e.getMessage());
        } catch (RuntimeException e) {
            throw new OpenAiError(500, "server_error", null, null, "the model failed: " + e.getMessage());
        }
    }

    /** {@return the 200 answer: each text's embedding (floats, or base64 of their bytes) and the tokens} */
    private Answer answer(EmbeddingsRequest request, ModelResult result) {
        float[] embeddings = result.tensor(SentenceTransformers.EMBEDDING).toFloatArray();
        List<Object> tokens = result.values(SentenceTransformers.TOKENS);
        int rows = request.input().size();
        int dim = (int) dimension;
        StringBuilder json = new StringBuilder(128 + rows * (request.base64() ? dim * 4 * 4 / 3 + 64 : dim * 12 + 64));
        json.append("{\"object\":\"list\",\"data\":[");
        long total = 0;
        ByteBuffer bytes = request.base64() ? ByteBuffer.allocate(dim * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN) : null;
        for (int r = 0; r < rows; r++) {
            total += ((Number) tokens.get(r)).longValue();
            json.append(r == 0 ? "" : ",").append("{\"object\":\"embedding\",\"index\":").append(r)
                    .append(",\"embedding\":");
            if (bytes != null) {
                bytes.clear();
                bytes.asFloatBuffer().put(embeddings, r * dim, dim);
                json.append('"').append(Base64.getEncoder().encodeToString(bytes.array())).append('"');
            } else {
                json.append('[');
                for (int i = 0; i < dim; i++) {
                    if (i > 0) {
                        json.append(',');
                    }
                    InferenceProtocol.appendFloat(json, embeddings[r * dim + i]);
                }
                json.append(']');
            }
            json.append('}');
        }
        json.append("],\"model\":").append(InferenceProtocol.quote(model.name())).append(",\"usage\":{\"prompt_tokens\":")
                .append(total).append(",\"total_tokens\":").append(total).append("}}");
        return Answer.json(200, json.toString());
    }

    private void send(Responder responder, Answer answer) {
        try {
            responder.send(answer);
        } catch (UncheckedIOException gone) {
            service.countClientGone();
            LOG.log(Level.FINE, "a client went away before its answer", gone);
        }
    }
}
