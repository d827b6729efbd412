package example.serve;

import static example.serve.protocol.V2Client.number;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import example.serve.protocol.InferenceProtocol;
import example.serve.protocol.ServeOptions;
import example.serve.protocol.V2Client;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code POST /v1/chat/completions} of the service in this JVM, serving the project's tiny causal LM
 * ({@code scripts/tiny-lm}) as {@code scripts/serve --model tiny-lm} does: greedy replies equal
 * transformers' own {@code generate} on the same directory in the same interpreter, whole or streamed
 * as server-sent events; every bad request has its status and OpenAI's error object; the model
 * raising is a 500 (or, once streaming, an error event); a client that goes away mid-stream frees the
 * model's place at once; a model without room for another stream answers 429 and its first-token
 * deadline 504 (a second service of one thread, a queue of one and a 300-ms deadline). The model's
 * {@code forward} is patched in Python to slow it or make it raise where a test needs that.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class ChatTest {
    static final Path TINY_LM = tinyLmDir();
    static final String HELLO = "[{\"role\":\"system\",\"content\":\"You answer briefly.\"},"
            + "{\"role\":\"user\",\"content\":\"Hello! What is DLPack?\"}]";

    static ServeTorch server;
    static ServeTorch strict;
    static Python py;

    @BeforeAll
    static void start() {
        server = ServeTorch.start(ServeOptions.parse("--model", "tiny-lm", "--weights", TINY_LM.toString(), "--port", "0"));
        strict = ServeTorch.start(ServeOptions.parse("--model", "tiny-lm", "--weights", TINY_LM.toString(), "--port", "0",
                "--runner-threads", "1", "--max-queue", "1", "--timeout-ms", "300"));
        py = Python.start();
        py.setGlobal("tiny_lm_dir", TINY_LM.toString());
        py.exec("""
                import json, time, serve_models, torch
                serve_models.torchvision_usable()
                import transformers
                reference_tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_lm_dir)
                reference_lm = transformers.AutoModelForCausalLM.from_pretrained(tiny_lm_dir).eval()

                def reference_greedy(messages, n):
                    prompt = reference_tokenizer.apply_chat_template(json.loads(messages), add_generation_prompt=True,
                                                                     return_tensors="pt", return_dict=True)
                    with torch.inference_mode():
                        out = reference_lm.generate(**prompt, max_new_tokens=n, do_sample=False)
                    return reference_tokenizer.decode(out[0, prompt["input_ids"].shape[1]:], skip_special_tokens=True,
                                                      clean_up_tokenization_spaces=False)

                # Every LlamaForCausalLM's forward (the served models' too): slowed or raising when a test says so.
                llama = type(reference_lm)
                original_forward = llama.forward
                patch = {"delay": 0.0, "fail_after": -1, "calls": 0}

                def patched_forward(self, *args, **kwargs):
                    patch["calls"] += 1
                    if 0 <= patch["fail_after"] < patch["calls"]:
                        raise RuntimeError("the weights are on holiday")
                    if patch["delay"]:
                        time.sleep(patch["delay"])
                    return original_forward(self, *args, **kwargs)

                llama.forward = patched_forward
                """);
    }

    @AfterEach
    void unpatch() {
        py.exec("patch.update(delay=0.0, fail_after=-1, calls=0)");
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (py != null) {
            py.exec("llama.forward = original_forward");
        }
        if (server != null) {
            server.stop();
        }
        if (strict != null) {
            strict.stop();
        }
    }

    private static Path tinyLmDir() {
        String d = System.getProperty("dlpack4j.tiny-lm");
        if (d == null || !Files.isDirectory(Path.of(d))) {
            throw new IllegalStateException("no model directory at " + d + " (system property dlpack4j.tiny-lm): make it "
                    + "with scripts/tiny-lm, which the example's build runs before the tests");
        }
        return Path.of(d);
    }

    // ---------------------------------------------------------------- replies equal transformers' generate

    @Test
    void aWholeGreedyReplyEqualsGenerateWithItsTokenCounts() throws Exception {
        Map<String, Object> r = ok(post(server, request(HELLO, 24)));
        assertEquals(List.of("id", "object", "created", "model", "choices", "usage"), List.copyOf(r.keySet()));
        assertTrue(((String) r.get("id")).startsWith("chatcmpl-"), r.toString());
        assertEquals("chat.completion", r.get("object"));
        assertEquals("tiny-lm", r.get("model"));
        Map<?, ?> choice = (Map<?, ?>) ((List<?>) r.get("choices")).getFirst();
        assertEquals(0L, choice.get("index"));
        assertEquals(Map.of("role", "assistant", "content", greedy(HELLO, 24)), choice.get("message"));
        Map<?, ?> usage = (Map<?, ?>) r.get("usage");
        long completion = (Long) usage.get("completion_tokens");
        assertEquals(choice.get("finish_reason").equals("length") ? 24L : completion, completion, r.toString());
        assertEquals(promptTokens(HELLO), usage.get("prompt_tokens"));
        assertEquals(promptTokens(HELLO) + completion, usage.get("total_tokens"));
    }

    @Test
    void streamedChunksJoinToTheSameReplyAndEndWithDone() throws Exception {
        HttpResponse<String> r = post(server, request(HELLO, 24, ",\"stream\":true,\"stream_options\":{\"include_usage\":true}"));
        assertEquals(200, r.statusCode(), r.body());
        assertEquals("text/event-stream", r.headers().firstValue("content-type").orElse(null));
        List<String> events = events(r.body());
        assertEquals("[DONE]", events.getLast());
        List<Map<String, Object>> chunks = events.subList(0, events.size() - 1).stream().map(ChatTest::json).toList();
        String id = (String) chunks.getFirst().get("id");
        StringBuilder content = new StringBuilder();
        for (int i = 0; i < chunks.size() - 1; i++) {
            Map<String, Object> c = chunks.get(i);
            assertEquals(id, c.get("id"));
            assertEquals("chat.completion.chunk", c.get("object"));
            assertTrue(c.containsKey("usage") && c.get("usage") == null, "include_usage: usage null but in the last");
            Map<?, ?> choice = (Map<?, ?>) ((List<?>) c.get("choices")).getFirst();
            Map<?, ?> delta = (Map<?, ?>) choice.get("delta");
            assertEquals(i == 0 ? "assistant" : null, delta.get("role"), "chunk " + i);
            if (i < chunks.size() - 2) {
                assertEquals(null, choice.get("finish_reason"), "chunk " + i);
                content.append((String) delta.get("content"));
            } else {
                assertEquals(Map.of(), delta, "the finish chunk");
                assertNotEquals(null, choice.get("finish_reason"));
            }
        }
        assertEquals(greedy(HELLO, 24), content.toString());
        Map<String, Object> usage = chunks.getLast();
        assertEquals(List.of(), usage.get("choices"));
        Map<String, Object> whole = ok(post(server, request(HELLO, 24)));
        assertEquals(whole.get("usage"), usage.get("usage"));

        List<String> plain = events(post(server, request(HELLO, 3, ",\"stream\":true")).body());
        assertEquals("[DONE]", plain.getLast());
        assertTrue(plain.subList(0, plain.size() - 1).stream().noneMatch(e -> e.contains("\"usage\"")), plain.toString());
    }

    @Test
    void aStopStringEndsTheReplyBeforeIt() throws Exception {
        String reply = greedy(HELLO, 24);
        String stop = reply.substring(reply.length() / 2, reply.length() / 2 + 2);
        Map<?, ?> choice = (Map<?, ?>) ((List<?>) ok(post(server, request(HELLO, 24, ",\"stop\":"
                + InferenceProtocol.quote(stop)))).get("choices")).getFirst();
        assertEquals(reply.substring(0, reply.indexOf(stop)), ((Map<?, ?>) choice.get("message")).get("content"));
        assertEquals("stop", choice.get("finish_reason"));
    }

    // ---------------------------------------------------------------- bad requests

    /** A bad request, its status, and the error object's {@code param} and part of its message. */
    record Bad(String what, String body, int status, String param, String messagePart) {}

    @Test
    void badRequestsGetTheirStatusAndOpenAisErrorObjectAndTheServiceAnswersRightAfter() throws Exception {
        String m = "\"model\":\"tiny-lm\"";
        String msgs = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
        List<Bad> bad = List.of(
                new Bad("malformed JSON", "{\"messages\": ", 400, null, "malformed JSON"),
                new Bad("not an object", "[1]", 400, null, "JSON object"),
                new Bad("no messages", "{" + m + "}", 400, "messages", "missing required parameter"),
                new Bad("no model", "{" + msgs + "}", 400, "model", "model parameter"),
                new Bad("no message", "{" + m + ",\"messages\":[]}", 400, "messages", "empty array"),
                new Bad("a message not an object", "{" + m + ",\"messages\":[\"hi\"]}", 400, "messages", "not an object"),
                new Bad("an unknown role", "{" + m + ",\"messages\":[{\"role\":\"tool\",\"content\":\"hi\"}]}", 400,
                        "messages", ".role must be one of"),
                new Bad("content parts", "{" + m + ",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]}",
                        400, "messages", "content must be a string"),
                new Bad("no content", "{" + m + ",\"messages\":[{\"role\":\"user\"}]}", 400, "messages", "no content"),
                new Bad("a lone surrogate", "{" + m + ",\"messages\":[{\"role\":\"user\",\"content\":\"a \\ud800 b\"}]}",
                        400, "messages", "lone surrogate"),
                new Bad("stream not a boolean", "{" + m + "," + msgs + ",\"stream\":1}", 400, "stream", "true or false"),
                new Bad("stream_options without stream", "{" + m + "," + msgs + ",\"stream_options\":{\"include_usage\":true}}",
                        400, "stream_options", "only allowed when 'stream' is true"),
                new Bad("max_tokens 0", "{" + m + "," + msgs + ",\"max_tokens\":0}", 400, "max_tokens", "at least 1"),
                new Bad("max_completion_tokens a string", "{" + m + "," + msgs + ",\"max_completion_tokens\":\"8\"}", 400,
                        "max_completion_tokens", "an integer"),
                new Bad("temperature 3", "{" + m + "," + msgs + ",\"temperature\":3}", 400, "temperature", "to 2.0"),
                new Bad("top_p 0", "{" + m + "," + msgs + ",\"top_p\":0}", 400, "top_p", "over 0.0"),
                new Bad("seed 1.5", "{" + m + "," + msgs + ",\"seed\":1.5}", 400, "seed", "an integer"),
                new Bad("five stop strings", "{" + m + "," + msgs + ",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", 400, "stop",
                        "more than 4"),
                new Bad("n 2", "{" + m + "," + msgs + ",\"n\":2}", 400, "n", "n must be 1"),
                new Bad("an unknown field", "{" + m + "," + msgs + ",\"tools\":[]}", 400, "tools",
                        "unrecognized request argument supplied: tools"),
                new Bad("a prompt over the context", request("[{\"role\":\"user\",\"content\":"
                        + InferenceProtocol.quote("tensor ".repeat(1500)) + "}]", 8), 400, "messages", "context"),
                new Bad("an unknown model", "{\"model\":\"gpt-4o\"," + msgs + "}", 404, "model", "'gpt-4o' does not exist"));
        long before = number(V2Client.get(server.port(), "/admin/stats").body(), "bad_requests");
        String want = greedy(HELLO, 4);
        for (Bad b : bad) {
            for (String stream : List.of("", ",\"stream\":true")) {
                String body = stream.isEmpty() || !b.body().endsWith("}") || b.what().contains("stream")
                        ? b.body() : b.body().substring(0, b.body().length() - 1) + stream + "}";
                HttpResponse<String> r = post(server, body);
                assertEquals(b.status(), r.statusCode(), b.what() + stream + ": " + r.body());
                assertEquals("application/json", r.headers().firstValue("content-type").orElse(null), b.what());
                Map<?, ?> error = error(r, b.what());
                assertEquals("invalid_request_error", error.get("type"), b.what());
                assertEquals(b.param(), error.get("param"), b.what());
                assertTrue(((String) error.get("message")).contains(b.messagePart()),
                        b.what() + ": the message " + error.get("message") + " should say '" + b.messagePart() + "'");
                assertEquals(b.status() == 404 ? "model_not_found" : null, error.get("code"), b.what());
            }
            assertEquals(want, content(ok(post(server, request(HELLO, 4)))), "after " + b.what());
        }
        long counted = number(V2Client.get(server.port(), "/admin/stats").body(), "bad_requests") - before;
        assertEquals(2L * (bad.size() - 1), counted, "bad requests counted (the 404s are not)");
    }

    // ---------------------------------------------------------------- the model failing

    @Test
    void theModelRaisingIs500AndOnceStreamingAnErrorEventWithoutDone() throws Exception {
        py.exec("patch.update(fail_after=0)");
        HttpResponse<String> whole = post(server, request(HELLO, 8));
        assertEquals(500, whole.statusCode(), whole.body());
        Map<?, ?> error = error(whole, "the model raising");
        assertEquals("server_error", error.get("type"));
        assertEquals("the model raised RuntimeError: the weights are on holiday", error.get("message"));

        py.exec("patch.update(fail_after=4, calls=0)");   // the prompt and three tokens, then it raises
        HttpResponse<String> streamed = post(server, request(HELLO, 16, ",\"stream\":true"));
        assertEquals(200, streamed.statusCode(), streamed.body());
        List<String> events = events(streamed.body());
        assertTrue(events.size() >= 2, streamed.body());
        Map<?, ?> last = (Map<?, ?>) json(events.getLast()).get("error");
        assertEquals("the model raised RuntimeError: the weights are on holiday", last.get("message"), streamed.body());
        assertEquals("server_error", last.get("type"));
        assertTrue(events.stream().noneMatch(e -> e.equals("[DONE]")), streamed.body());

        py.exec("patch.update(fail_after=-1)");
        assertEquals(greedy(HELLO, 8), content(ok(post(server, request(HELLO, 8)))), "after the model raised");
    }

    // ---------------------------------------------------------------- clients that go away, a full model, the deadline

    @Test
    void aClientThatDisconnectsMidStreamFreesTheModelAtOnce() throws Exception {
        py.exec("patch.update(delay=0.02)");   // 1,000 tokens: 20 s, unless cancelled
        String before = V2Client.get(server.port(), "/admin/stats").body();
        try (Socket s = openStream(server, request(HELLO, 1000, ",\"stream\":true"))) {
            readEvents(s, 3);
        }
        long gone = System.nanoTime();
        String after = V2Client.get(server.port(), "/admin/stats").body();
        while (number(after, "in_flight") > 0 && System.nanoTime() - gone < TimeUnit.SECONDS.toNanos(10)) {
            Thread.sleep(20);
            after = V2Client.get(server.port(), "/admin/stats").body();
        }
        long freedMillis = (System.nanoTime() - gone) / 1_000_000;
        assertEquals(0, number(after, "in_flight"), after);
        assertTrue(freedMillis < 3000, "the stream went on for " + freedMillis + " ms after its client left");
        assertEquals(number(before, "requests") + 1, number(after, "requests"), before + "\n" + after);
        assertEquals(number(before, "answered"), number(after, "answered"), "the stream was not answered: " + after);
        assertEquals(number(before, "clients_gone") + 1, number(after, "clients_gone"), after);
        py.exec("patch.update(delay=0.0)");
        long start = System.nanoTime();
        assertEquals(greedy(HELLO, 8), content(ok(post(server, request(HELLO, 8)))), "after the disconnect");
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "the next request waited");
    }

    @Test
    void aModelWithoutRoomForAnotherStreamIs429AndTheFirstTokenDeadlineIs504() throws Exception {
        py.exec("patch.update(delay=0.01)");   // 1,000 tokens: 10 s and more
        // One thread, a queue of one: two streams open at most.
        try (Socket first = openStream(strict, request(HELLO, 1000, ",\"stream\":true"));
             Socket second = openStream(strict, request(HELLO, 1000, ",\"stream\":true"))) {
            readEvents(first, 2);
            readEvents(second, 2);
            for (String stream : List.of("", ",\"stream\":true")) {
                HttpResponse<String> r = post(strict, request(HELLO, 4, stream));
                assertEquals(429, r.statusCode(), r.body());
                Map<?, ?> error = error(r, "a third stream");
                assertEquals("rate_limit_error", error.get("type"));
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (number(V2Client.get(strict.port(), "/admin/stats").body(), "in_flight") > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        py.exec("patch.update(delay=0.5)");   // the first token takes longer than the 300-ms deadline
        for (String stream : List.of("", ",\"stream\":true")) {
            HttpResponse<String> r = post(strict, request(HELLO, 4, stream));
            assertEquals(504, r.statusCode(), r.body());
            Map<?, ?> error = error(r, "the deadline");
            assertEquals("server_error", error.get("type"));
        }
        py.exec("patch.update(delay=0.0)");
        Thread.sleep(1200);   // the one thread finishes the slow steps that were running when the deadlines passed
        assertEquals(greedy(HELLO, 4), content(ok(post(strict, request(HELLO, 4)))), "after the deadline");
    }

    // ---------------------------------------------------------------- helpers

    static String request(String messages, int maxTokens) {
        return request(messages, maxTokens, "");
    }

    /** {@return a greedy request of {@code messages} to tiny-lm, with {@code more} fields after them} */
    static String request(String messages, int maxTokens, String more) {
        return "{\"model\":\"tiny-lm\",\"messages\":" + messages + ",\"max_tokens\":" + maxTokens + ",\"temperature\":0"
                + more + "}";
    }

    static HttpResponse<String> post(ServeTorch s, String body) throws Exception {
        return V2Client.http().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port()
                        + "/v1/chat/completions")).timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** {@return a socket that sent a streamed request, its answer left to read} */
    static Socket openStream(ServeTorch s, String body) throws Exception {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        Socket socket = new Socket("127.0.0.1", s.port());
        socket.setSoTimeout(30_000);
        OutputStream out = socket.getOutputStream();
        out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + bytes.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(bytes);
        out.flush();
        return socket;
    }

    /** Reads the answer's head and then {@code n} events. */
    static void readEvents(Socket s, int n) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
        String status = in.readLine();
        assertEquals("HTTP/1.1 200 OK", status);
        int seen = 0;
        for (String line = in.readLine(); line != null && seen < n; line = in.readLine()) {
            if (line.startsWith("data: ")) {
                seen++;
            }
        }
        assertEquals(n, seen, "events before the socket closed");
    }

    /** {@return the data of each event of a streamed answer, in order} */
    static List<String> events(String body) {
        List<String> events = new ArrayList<>();
        for (String block : body.split("\n\n")) {
            if (!block.isBlank()) {
                assertTrue(block.startsWith("data: "), "an event that is not data: " + block);
                events.add(block.substring("data: ".length()));
            }
        }
        return events;
    }

    static Map<String, Object> ok(HttpResponse<String> r) {
        assertEquals(200, r.statusCode(), r.body());
        return json(r.body());
    }

    static String content(Map<String, Object> answer) {
        Map<?, ?> choice = (Map<?, ?>) ((List<?>) answer.get("choices")).getFirst();
        return (String) ((Map<?, ?>) choice.get("message")).get("content");
    }

    /** {@return the error object of an error answer, checked to have OpenAI's four fields and no others} */
    static Map<?, ?> error(HttpResponse<String> r, String what) {
        Map<String, Object> answer = json(r.body());
        assertEquals(List.of("error"), List.copyOf(answer.keySet()), what + ": " + r.body());
        Map<?, ?> error = (Map<?, ?>) answer.get("error");
        assertEquals(List.of("message", "type", "param", "code"), List.copyOf(error.keySet()), what + ": " + r.body());
        return error;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> json(String body) {
        py.setGlobal("answer_body", body);
        try (PyObject v = py.eval("json.loads(answer_body)")) {
            return (Map<String, Object>) v.toJava();
        }
    }

    /** {@return transformers' greedy {@code generate} of at most {@code n} tokens for {@code messages}, decoded} */
    static String greedy(String messages, int n) {
        py.setGlobal("messages", messages);
        py.setGlobal("n", (long) n);
        try (PyObject v = py.eval("reference_greedy(messages, n)")) {
            return v.str();
        }
    }

    static long promptTokens(String messages) {
        py.setGlobal("messages", messages);
        try (PyObject v = py.eval("len(reference_tokenizer.apply_chat_template(json.loads(messages), "
                + "add_generation_prompt=True, tokenize=True, return_dict=True)['input_ids'])")) {
            return v.asLong();
        }
    }
}
