package example.spring;

import example.serve.protocol.InferenceProtocol;
import example.serve.protocol.InferenceProtocol.Answer;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.event.EventListener;
import org.springframework.web.HttpRequestMethodNotSupportedException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.servlet.NoHandlerFoundException;

/**
 * The Open Inference Protocol (KServe v2) endpoints as Spring MVC handlers, on Tomcat's virtual
 * threads: each hands what it read from the request to {@link InferenceProtocol} (shared with the
 * Helidon example), which checks it, calls the model bean and makes the answer, and writes that
 * answer to the servlet response as it is, status, headers and bytes, as the Helidon service sends
 * it (no message converter or content negotiation in between).
 */
@RestController
class InferenceController {
    private final InferenceProtocol protocol;

    InferenceController(InferenceProtocol protocol) {
        this.protocol = protocol;
    }

    @GetMapping("/v2/health/live")
    void live(HttpServletResponse response) {
        send(response, protocol.live());
    }

    @GetMapping("/v2/health/ready")
    void ready(HttpServletResponse response) {
        send(response, protocol.ready());
    }

    @GetMapping("/v2")
    void serverMetadata(HttpServletResponse response) {
        send(response, protocol.serverMetadata());
    }

    @GetMapping("/v2/models/{name}")
    void modelMetadata(@PathVariable("name") String name, HttpServletResponse response) {
        send(response, protocol.modelMetadata(name));
    }

    @GetMapping("/v2/models/{name}/ready")
    void modelReady(@PathVariable("name") String name, HttpServletResponse response) {
        send(response, protocol.modelReady(name));
    }

    @PostMapping("/v2/models/{name}/infer")
    void infer(@PathVariable("name") String name, HttpServletRequest request, HttpServletResponse response)
            throws IOException {
        protocol.infer(name, request.getContentLengthLong(), request.getInputStream(),
                request.getHeader(InferenceProtocol.INFERENCE_HEADER_CONTENT_LENGTH), answer -> write(response, answer));
    }

    @GetMapping("/admin/stats")
    void stats(HttpServletResponse response) {
        send(response, protocol.stats());
    }

    /** From the context's close on, inference requests and the ready endpoints get 503, as the Helidon service's do after SIGTERM. */
    @EventListener(ContextClosedEvent.class)
    void startDraining() {
        protocol.startDraining();
    }

    /** Sends an answer of an endpoint other than inference; a client gone before it is no one's error. */
    static void send(HttpServletResponse response, Answer answer) {
        try {
            write(response, answer);
        } catch (UncheckedIOException gone) {
            // nothing to answer to
        }
    }

    /**
     * Writes an answer: status, content type, the binary data's header, length, body.
     *
     * @throws UncheckedIOException if the client went away
     */
    static void write(HttpServletResponse response, Answer answer) {
        response.setStatus(answer.status());
        if (answer.contentType() != null) {
            response.setContentType(answer.contentType());
        }
        if (answer.jsonLength() >= 0) {
            response.setHeader(InferenceProtocol.INFERENCE_HEADER_CONTENT_LENGTH, Integer.toString(answer.jsonLength()));
        }
        response.setContentLength(answer.body().length);
        try {
            response.getOutputStream().write(answer.body());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A request no endpoint takes (a path, or a method on a path): 404 with a v2 error body, as the Helidon service answers. */
    @RestControllerAdvice
    static class NoEndpoint {
        private final InferenceProtocol protocol;

        NoEndpoint(InferenceProtocol protocol) {
            this.protocol = protocol;
        }

        @ExceptionHandler({NoHandlerFoundException.class, HttpRequestMethodNotSupportedException.class})
        void noEndpoint(HttpServletRequest request, HttpServletResponse response) {
            send(response, protocol.noEndpoint(request.getMethod(), request.getRequestURI()));
        }
    }
}
