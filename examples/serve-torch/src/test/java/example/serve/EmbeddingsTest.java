package example.serve;

import static example.serve.protocol.V2Client.number;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import example.serve.protocol.InferenceProtocol;
import example.serve.protocol.ServeOptions;
import example.serve.protocol.V2Client;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code POST /v1/embeddings} of the service in this JVM, serving all-MiniLM-L6-v2's real weights
 * ({@code scripts/minilm}) with batching, as {@code scripts/serve --model minilm} does: answers
 * equal sentence-transformers' own {@code encode} on the same directory in the same interpreter,
 * with its tokenizer's token counts; every bad request gets its status and OpenAI's error object,
 * and the service answers right after it; the model's error is a 500, a full queue a 429 and its
 * deadline a 504 (a second service with a queue of one and a 300-ms deadline); concurrent clients
 * each get their own rows of the batches; clients that go away leave nothing behind.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class EmbeddingsTest {
    static final Path MINILM = minilmDir();
    static final List<String> SENTENCES = List.of(
            "A cat sits on the mat.",
            "A kitten rests on a rug near the warm fireplace.",
            "The stock market fell sharply today after the central bank raised interest rates again.",
            "DLPack lets frameworks share tensors without copying their memory.",
            "Zürich's café serves crème brûlée every Sunday morning, and the queue reaches the corner.",
            "東京は日本の首都です。",
            "Close the tensor once you are done with it, or the memory stays held until the cleaner runs.",
            "Why is the sky blue? Because air scatters short wavelengths of sunlight more than long ones, "
                    + "so blue light reaches our eyes from every direction of the sky.");
    /** A request that takes the model well over 300 ms on one thread: 48 texts of about 70 tokens (a second or so). */
    static final String HEAVY = "{\"model\":\"minilm\",\"input\":[" + String.join(",", Collections.nCopies(48,
            InferenceProtocol.quote(String.join(" ", Collections.nCopies(4, SENTENCES.get(2)))))) + "]}";

    static ServeTorch server;
    static ServeTorch strict;
    static Python py;

    @BeforeAll
    static void start() {
        server = ServeTorch.start(ServeOptions.parse("--model", "minilm", "--weights", MINILM.toString(), "--port", "0",
                "--max-body-mb", "1"));
        strict = ServeTorch.start(ServeOptions.parse("--model", "minilm", "--weights", MINILM.toString(), "--port", "0",
                "--no-batching", "--runner-threads", "1", "--max-queue", "1", "--timeout-ms", "300"));
        py = Python.start();
        py.setGlobal("minilm_dir", MINILM.toString());
        py.exec("""
                import base64, json, serve_models
                reference_minilm = serve_models.sentence_transformer(minilm_dir)

                def reference_tokens(texts):
                    ids = reference_minilm.tokenizer(texts, truncation=True, max_length=reference_minilm.max_seq_length)
                    return sum(len(i) for i in ids["input_ids"])
                """);
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (server != null) {
            server.stop();
        }
        if (strict != null) {
            strict.stop();
        }
    }

    private static Path minilmDir() {
        String d = System.getProperty("dlpack4j.minilm");
        if (d == null || !Files.isDirectory(Path.of(d))) {
            throw new IllegalStateException("no model directory at " + d + " (system property dlpack4j.minilm): make it "
                    + "with scripts/minilm, which the example's build runs before the tests");
        }
        return Path.of(d);
    }

    // ---------------------------------------------------------------- answers equal sentence-transformers'

    @Test
    void oneTextAndManyEqualSentenceTransformersEncodeWithItsTokenCounts() throws Exception {
        Map<String, Object> one = ok(post(server, "{\"input\":" + InferenceProtocol.quote(SENTENCES.get(0))
                + ",\"model\":\"minilm\"}"));
        assertEquals("list", one.get("object"));
        assertEquals("minilm", one.get("model"));
        assertClose(encode(SENTENCES.subList(0, 1)), embeddings(one), "one text");
        assertEquals(Map.of("prompt_tokens", tokens(SENTENCES.subList(0, 1)), "total_tokens",
                tokens(SENTENCES.subList(0, 1))), one.get("usage"));

        Map<String, Object> many = ok(post(server, request(SENTENCES, ",\"encoding_format\":\"float\"")));
        assertClose(encode(SENTENCES), embeddings(many), "eight texts");
        assertEquals(tokens(SENTENCES), ((Map<?, ?>) many.get("usage")).get("prompt_tokens"));
        List<?> data = (List<?>) many.get("data");
        for (int i = 0; i < data.size(); i++) {
            Map<?, ?> item = (Map<?, ?>) data.get(i);
            assertEquals("embedding", item.get("object"));
            assertEquals((long) i, item.get("index"));
        }
    }

    @Test
    void base64IsTheLittleEndianFloat32BytesOfTheFloats() throws Exception {
        float[][] floats = embeddings(ok(post(server, request(SENTENCES.subList(2, 5), ""))));
        Map<String, Object> r = ok(post(server, request(SENTENCES.subList(2, 5), ",\"encoding_format\":\"base64\"")));
        List<?> data = (List<?>) r.get("data");
        for (int i = 0; i < data.size(); i++) {
            byte[] bytes = Base64.getDecoder().decode((String) ((Map<?, ?>) data.get(i)).get("embedding"));
            float[] got = new float[bytes.length / 4];
            ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(got);
            assertEquals(floats[i].length, got.length);
            for (int j = 0; j < got.length; j++) {
                assertEquals(floats[i][j], got[j], "text " + i + ", element " + j);
            }
        }
    }

    // ---------------------------------------------------------------- bad requests

    /** A bad request, its status, and the error object's {@code type}, {@code param} and part of its message. */
    record Bad(String what, String body, int status, String type, String param, String messagePart) {}

    @Test
    void badRequestsGetTheirStatusAndOpenAisErrorObjectAndTheServiceAnswersRightAfter() throws Exception {
        String bad400 = "invalid_request_error";
        List<Bad> bad = List.of(
                new Bad("malformed JSON", "{\"input\": ", 400, bad400, null, "malformed JSON"),
                new Bad("not an object", "[\"a cat\"]", 400, bad400, null, "JSON object"),
                new Bad("trailing bytes", "{\"input\":\"a\",\"model\":\"minilm\"} x", 400, bad400, null, "malformed JSON"),
                new Bad("no input", "{\"model\":\"minilm\"}", 400, bad400, "input", "missing required parameter"),
                new Bad("input null", "{\"input\":null,\"model\":\"minilm\"}", 400, bad400, "input", "missing"),
                new Bad("no model", "{\"input\":\"a cat\"}", 400, bad400, "model", "model parameter"),
                new Bad("an empty string", "{\"input\":\"\",\"model\":\"minilm\"}", 400, bad400, "input", "empty string"),
                new Bad("an empty string among others", "{\"input\":[\"a\",\"\"],\"model\":\"minilm\"}", 400, bad400,
                        "input", "'$.input[1]' is an empty string"),
                new Bad("an empty array", "{\"input\":[],\"model\":\"minilm\"}", 400, bad400, "input", "empty array"),
                new Bad("a number among the strings", "{\"input\":[\"a\",true],\"model\":\"minilm\"}", 400, bad400,
                        "input", "'$.input[1]' is not a string"),
                new Bad("token ids", "{\"input\":[101,2023],\"model\":\"minilm\"}", 400, bad400, "input", "token id"),
                new Bad("an object as input", "{\"input\":{\"text\":\"a\"},\"model\":\"minilm\"}", 400, bad400, "input",
                        "a string or an array of strings"),
                new Bad("a lone surrogate", "{\"input\":[\"fine\",\"a \\ud800 b\"],\"model\":\"minilm\"}", 400, bad400,
                        "input", "row 1 has a lone surrogate (U+D800)"),
                new Bad("too many inputs", request(Collections.nCopies(2049, "a"), ""), 400, bad400, "input",
                        "more than 2048"),
                new Bad("an unknown field", "{\"input\":\"a\",\"model\":\"minilm\",\"temperature\":1}", 400, bad400,
                        "temperature", "unrecognized request argument supplied: temperature"),
                new Bad("an unknown encoding", "{\"input\":\"a\",\"model\":\"minilm\",\"encoding_format\":\"int8\"}", 400,
                        bad400, "encoding_format", "'int8'"),
                new Bad("other dimensions", "{\"input\":\"a\",\"model\":\"minilm\",\"dimensions\":128}", 400, bad400,
                        "dimensions", "384 dimensions"),
                new Bad("a body over the limit (--max-body-mb 1)", "{\"input\":\"" + "a".repeat(1 << 20) + "\"}", 400,
                        bad400, null, "more than the limit of 1048576"),
                new Bad("an unknown model", "{\"input\":\"a cat\",\"model\":\"text-embedding-3-small\"}", 404, bad400,
                        "model", "'text-embedding-3-small' does not exist"));
        long before = number(V2Client.get(server.port(), "/admin/stats").body(), "bad_requests");
        float[][] want = encode(SENTENCES.subList(0, 1));
        for (Bad b : bad) {
            HttpResponse<String> r = post(server, b.body());
            assertEquals(b.status(), r.statusCode(), b.what() + ": " + r.body());
            Map<?, ?> error = error(r, b.what());
            assertEquals(b.type(), error.get("type"), b.what());
            assertEquals(b.param(), error.get("param"), b.what());
            assertTrue(((String) error.get("message")).contains(b.messagePart()),
                    b.what() + ": the message " + error.get("message") + " should say '" + b.messagePart() + "'");
            assertEquals(b.status() == 404 ? "model_not_found" : null, error.get("code"), b.what());
            assertClose(want, embeddings(ok(post(server, request(SENTENCES.subList(0, 1), "")))), "after " + b.what());
        }
        long counted = number(V2Client.get(server.port(), "/admin/stats").body(), "bad_requests") - before;
        assertEquals(bad.size() - 1, counted, "bad requests counted (the 404 is not one)");
    }

    @Test
    void theModelRaisingIs500WithPythonsTypeAndMessage() throws Exception {
        py.exec("""
                from sentence_transformers import SentenceTransformer
                original_forward = SentenceTransformer.forward
                def failing_forward(self, *args, **kwargs):
                    raise ValueError("the weights are on holiday")
                SentenceTransformer.forward = failing_forward
                """);
        HttpResponse<String> r;
        try {
            r = post(server, request(SENTENCES.subList(0, 2), ""));
        } finally {
            py.exec("SentenceTransformer.forward = original_forward");
        }
        assertEquals(500, r.statusCode(), r.body());
        Map<?, ?> error = error(r, "the model raising");
        assertEquals("server_error", error.get("type"));
        assertEquals("the model raised ValueError: the weights are on holiday", error.get("message"));
        assertClose(encode(SENTENCES.subList(0, 2)), embeddings(ok(post(server, request(SENTENCES.subList(0, 2), "")))),
                "after the model raised");
    }

    @Test
    void aFullQueueIs429AndTheDeadlineIs504() throws Exception {
        // One model thread, a queue of one: of eight heavy requests at once one runs, one waits, the rest are refused.
        List<HttpResponse<String>> answers = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(8)) {
            List<Future<HttpResponse<String>>> sent = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                sent.add(pool.submit(() -> post(strict, HEAVY)));
            }
            for (Future<HttpResponse<String>> f : sent) {
                answers.add(f.get(60, TimeUnit.SECONDS));
            }
        }
        int refused = 0;
        for (HttpResponse<String> r : answers) {
            assertTrue(r.statusCode() == 429 || r.statusCode() == 504, r.statusCode() + ": " + r.body());
            Map<?, ?> error = error(r, "status " + r.statusCode());
            if (r.statusCode() == 429) {
                refused++;
                assertEquals("rate_limit_error", error.get("type"));
                assertTrue(((String) error.get("message")).contains("requests wait already"), r.body());
            } else {
                assertEquals("server_error", error.get("type"));
                assertTrue(((String) error.get("message")).contains("deadline"), r.body());
            }
        }
        assertTrue(refused >= 1, "no request of eight was refused by a queue of one");
        HttpResponse<String> alone = post(strict, HEAVY);   // longer than the deadline on its own
        assertEquals(504, alone.statusCode(), alone.body());
    }

    // ---------------------------------------------------------------- the v2 endpoints beside it

    @Test
    void theV2EndpointsSayTheModelTakesText() throws Exception {
        assertEquals(200, V2Client.get(server.port(), "/v2/health/ready").statusCode());
        HttpResponse<String> metadata = V2Client.get(server.port(), "/v2/models/minilm");
        assertEquals(404, metadata.statusCode());
        assertEquals("{\"error\":\"model 'minilm' takes text, not tensors: it is not served over v2\"}", metadata.body());
        assertEquals(404, V2Client.post(server.port(), "minilm", "{\"inputs\":[]}".getBytes(StandardCharsets.UTF_8), -1)
                .statusCode());
    }

    // ---------------------------------------------------------------- many clients

    @Test
    void thirtyTwoConcurrentClientsEachGetTheirOwnRowsOfTheBatches() throws Exception {
        int clients = 32;
        int each = 4;
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < clients * each; i++) {
            texts.add(SENTENCES.get(i % SENTENCES.size()) + " (request " + i + ")");
        }
        float[][] want = encode(texts);
        long batchesBefore = number(V2Client.get(server.port(), "/admin/stats").body(), "batches");
        List<String> bodies = new ArrayList<>(Collections.nCopies(texts.size(), null));
        try (ExecutorService pool = Executors.newFixedThreadPool(clients)) {
            List<Future<?>> done = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                int client = c;
                done.add(pool.submit(() -> {
                    for (int k = 0; k < each; k++) {
                        int i = client * each + k;
                        HttpResponse<String> r = post(server, "{\"model\":\"minilm\",\"input\":"
                                + InferenceProtocol.quote(texts.get(i)) + "}");
                        assertEquals(200, r.statusCode(), r.body());
                        bodies.set(i, r.body());
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(120, TimeUnit.SECONDS);
            }
        }
        long batches = number(V2Client.get(server.port(), "/admin/stats").body(), "batches") - batchesBefore;
        for (int i = 0; i < texts.size(); i++) {
            assertClose(new float[][] {want[i]}, embeddings(json(bodies.get(i))), "request " + i);
        }
        assertTrue(batches < texts.size(), "batching ran " + batches + " model calls for " + texts.size() + " requests");
    }

    // ---------------------------------------------------------------- clients that go away

    @Test
    void clientsThatDisconnectMidRequestLeaveNothingBehind() throws Exception {
        String request = request(SENTENCES, "");
        byte[] body = request.getBytes(StandardCharsets.UTF_8);
        ok(post(server, request));   // warm: every buffer made
        String before = V2Client.get(server.port(), "/admin/stats").body();
        String head = "POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + body.length + "\r\n\r\n";
        for (int i = 0; i < 5; i++) {
            try (Socket s = new Socket("127.0.0.1", server.port())) {   // half a body, then gone
                OutputStream out = s.getOutputStream();
                out.write(head.getBytes(StandardCharsets.US_ASCII));
                out.write(body, 0, body.length / 2);
                out.flush();
            }
            try (Socket s = new Socket("127.0.0.1", server.port())) {   // all of it, gone before the answer
                OutputStream out = s.getOutputStream();
                out.write(head.getBytes(StandardCharsets.US_ASCII));
                out.write(body);
                out.flush();
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        String after;
        do {
            Thread.sleep(200);
            after = V2Client.get(server.port(), "/admin/stats").body();
        } while ((number(after, "in_flight") > 0 || number(after, "clients_gone") - number(before, "clients_gone") < 5)
                && System.nanoTime() < deadline);
        assertEquals(0, number(after, "in_flight"), after);
        // those that sent half a body at least (an answer to a closed socket may still fit its buffer)
        assertTrue(number(after, "clients_gone") - number(before, "clients_gone") >= 5, before + "\n" + after);
        assertTrue(number(after, "live_exports") <= number(before, "live_exports"), before + "\n" + after);
        assertTrue(number(after, "native_bytes") <= number(before, "native_bytes"), before + "\n" + after);
        assertClose(encode(SENTENCES.subList(0, 3)), embeddings(ok(post(server, request(SENTENCES.subList(0, 3), "")))),
                "after the disconnects");
    }

    // ---------------------------------------------------------------- helpers

    /** {@return a request of {@code texts} to minilm, with {@code more} fields after them} */
    static String request(List<String> texts, String more) {
        return "{\"model\":\"minilm\",\"input\":[" + String.join(",", texts.stream().map(InferenceProtocol::quote)
                .toList()) + "]" + more + "}";
    }

    static HttpResponse<String> post(ServeTorch s, String body) throws Exception {
        return V2Client.http().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + "/v1/embeddings"))
                .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** {@return the JSON of a 200 answer, read by Python's json} */
    static Map<String, Object> ok(HttpResponse<String> r) {
        assertEquals(200, r.statusCode(), r.body());
        return json(r.body());
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

    static float[][] embeddings(Map<String, Object> answer) {
        List<?> data = (List<?>) answer.get("data");
        float[][] out = new float[data.size()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = floats((List<?>) ((Map<?, ?>) data.get(i)).get("embedding"));
        }
        return out;
    }

    /** {@return sentence-transformers' {@code encode} of {@code texts}, run directly on the same directory} */
    static float[][] encode(List<String> texts) {
        py.setGlobal("texts", texts);
        try (PyObject v = py.eval("reference_minilm.encode(texts).tolist()")) {
            List<?> rows = (List<?>) v.toJava();
            float[][] out = new float[rows.size()][];
            for (int i = 0; i < out.length; i++) {
                out[i] = floats((List<?>) rows.get(i));
            }
            return out;
        }
    }

    /** {@return the tokens of {@code texts} by the model's own tokenizer (special tokens in, truncated as the model truncates)} */
    static long tokens(List<String> texts) {
        py.setGlobal("texts", texts);
        try (PyObject v = py.eval("reference_tokens(texts)")) {
            return v.asLong();
        }
    }

    static float[] floats(List<?> values) {
        float[] a = new float[values.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = ((Number) values.get(i)).floatValue();
        }
        return a;
    }

    /** Fails unless each row of {@code got} is within 1e-5 of {@code want}'s, element by element. */
    static void assertClose(float[][] want, float[][] got, String what) {
        assertEquals(want.length, got.length, what + ": rows");
        for (int i = 0; i < want.length; i++) {
            assertEquals(want[i].length, got[i].length, what + ": row " + i + "'s length");
            for (int j = 0; j < want[i].length; j++) {
                if (Math.abs(want[i][j] - got[i][j]) > 1e-5f) {
                    fail(what + ": row " + i + ", element " + j + " is " + got[i][j] + ", sentence-transformers says "
                            + want[i][j]);
                }
            }
        }
    }
}
