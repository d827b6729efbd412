package example.serve;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The service in this JVM, both models on one server (and mlp with batching on a second): answers
 * equal torch run directly in the same interpreter on the same inputs and weights; every bad request
 * gets its status and a v2 error body, and the service answers right after it; 64 concurrent
 * clients each get their own right answers; clients that go away leave nothing behind.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class ServiceTest {
    static final int MAX_BODY_MB = 4;
    static ServeTorch server;
    static ServeTorch batching;
    static HttpClient http;
    static Python py;

    @BeforeAll
    static void start() {
        server = ServeTorch.start(ServeOptions.parse("--model", "mlp,resnet18", "--port", "0", "--max-batch", "4",
                "--max-body-mb", String.valueOf(MAX_BODY_MB)));
        batching = ServeTorch.start(ServeOptions.parse("--model", "mlp", "--port", "0", "--batching",
                "--batch-window-us", "5000", "--max-batch", "16"));
        http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10))
                .build();
        py = Python.start();
        py.exec("""
                import torch, serve_models
                references = {name: serve_models.build(name) for name in ("mlp", "resnet18")}

                def reference(name, x):
                    with torch.inference_mode():
                        return references[name](torch.from_dlpack(x)).contiguous()
                """);
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (server != null) {
            server.stop();
        }
        if (batching != null) {
            batching.stop();
        }
    }

    // ---------------------------------------------------------------- answers equal torch's

    @Test
    void mlpJsonAndBinaryAnswersEqualTorch() throws Exception {
        float[] x = random(3 * 256, 1);
        float[] want = reference("mlp", x, 3, 256);
        assertClose(want, jsonOutput(post(server, "mlp", jsonRequest(x, 3, 256, false), -1)), "JSON in, JSON out");
        byte[][] binary = binaryRequest(x, 3, 256, true);
        assertClose(want, binaryOutput(post(server, "mlp", binary[0], binary[1].length)), "binary in and out");
        byte[][] jsonOut = binaryRequest(x, 3, 256, false);
        assertClose(want, jsonOutput(post(server, "mlp", jsonOut[0], jsonOut[1].length)), "binary in, JSON out");
        assertClose(want, binaryOutput(post(server, "mlp", jsonRequest(x, 3, 256, true), -1)), "JSON in, binary out");
        assertClose(want, binaryOutput(post(batching, "mlp", binary[0], binary[1].length)), "with batching");
    }

    @Test
    void resnet18JsonAndBinaryAnswersEqualTorch() throws Exception {
        int row = 3 * 224 * 224;
        float[] one = random(row, 2);
        assertClose(reference("resnet18", one, 1, 3, 224, 224),
                jsonOutput(post(server, "resnet18", jsonRequest(one, 1, row, false), -1)), "JSON");
        float[] two = random(2 * row, 3);
        byte[][] binary = binaryRequest(two, 2, row, true, 3, 224, 224);
        assertClose(reference("resnet18", two, 2, 3, 224, 224),
                binaryOutput(post(server, "resnet18", binary[0], binary[1].length)), "binary");
        float[] six = random(6 * row, 4);   // more rows than --max-batch 4: a tensor of its own
        byte[][] big = binaryRequest(six, 6, row, true, 3, 224, 224);
        assertClose(reference("resnet18", six, 6, 3, 224, 224),
                binaryOutput(post(server, "resnet18", big[0], big[1].length)), "6 rows");
    }

    @Test
    void weightsFromAStateDictFile(@TempDir Path dir) throws Exception {
        Path weights = dir.resolve("mlp-seed1.pt");
        py.exec("torch.save(serve_models.build('mlp', seed=1).state_dict(), " + InferenceService.quote(weights.toString())
                + ")\nreferences['mlp1'] = serve_models.build('mlp', weights=" + InferenceService.quote(weights.toString())
                + ")");
        ServeTorch other = ServeTorch.start(ServeOptions.parse("--model", "mlp", "--port", "0", "--weights",
                weights.toString()));
        try {
            float[] x = random(256, 5);
            float[] seeded = reference("mlp", x, 1, 256);
            float[] fromFile = reference("mlp1", x, 1, 256);
            assertTrue(Math.abs(seeded[0] - fromFile[0]) > 1e-4, "seed 1 makes other weights than seed 0");
            byte[][] binary = binaryRequest(x, 1, 256, true);
            assertClose(fromFile, binaryOutput(post(other, "mlp", binary[0], binary[1].length)), "--weights");
        } finally {
            other.stop();
        }
    }

    @Test
    void healthAndMetadata() throws Exception {
        assertEquals(200, get(server, "/v2/health/live").statusCode());
        assertEquals(200, get(server, "/v2/health/ready").statusCode());
        assertEquals(200, get(server, "/v2/models/mlp/ready").statusCode());
        assertEquals("{\"name\":\"mlp\",\"versions\":[\"1\"],\"platform\":\"pytorch_torch\",\"inputs\":[{\"name\":\"x\","
                + "\"datatype\":\"FP32\",\"shape\":[-1,256]}],\"outputs\":[{\"name\":\"y\",\"datatype\":\"FP32\","
                + "\"shape\":[-1,16]}]}", get(server, "/v2/models/mlp").body());
        assertTrue(get(server, "/v2/models/resnet18").body().contains("\"shape\":[-1,3,224,224]"));
        assertTrue(get(server, "/v2").body().contains("binary_tensor_data"));
        HttpResponse<String> unknown = get(server, "/v2/models/resnet50");
        assertEquals(404, unknown.statusCode());
        assertEquals("{\"error\":\"unknown model 'resnet50'\"}", unknown.body());
    }

    // ---------------------------------------------------------------- bad requests

    record Bad(String what, int status, String body, long headerLength, byte[] binary, String errorPart) {}

    @Test
    void badRequestsGetTheirStatusAndTheServiceAnswersRightAfter() throws Exception {
        String x = "\"name\":\"x\",\"datatype\":\"FP32\"";
        String data256 = zeros(256);
        String bin1024 = "{\"inputs\":[{" + x + ",\"shape\":[1,256],\"parameters\":{\"binary_data_size\":1024}}]}";
        List<Bad> bad = List.of(
                new Bad("malformed JSON", 400, "{\"inputs\": [", -1, null, "malformed JSON"),
                new Bad("malformed JSON inside", 400, "{\"inputs\": [{\"name\": }]}", -1, null, "malformed JSON"),
                new Bad("not an object", 400, "[1, 2]", -1, null, "JSON object"),
                new Bad("trailing garbage", 400, "{\"inputs\":[{" + x + ",\"shape\":[1,256],\"data\":[" + data256 + "]}]} x",
                        -1, null, "malformed JSON"),
                new Bad("unknown datatype", 400, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP31\",\"shape\":[1,256],"
                        + "\"data\":[" + data256 + "]}]}", -1, null, "unknown datatype 'FP31'"),
                new Bad("datatype not the model's", 400, "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"INT64\",\"shape\":[1,256],"
                        + "\"data\":[" + data256 + "]}]}", -1, null, "takes FP32"),
                new Bad("data shorter than the shape", 400, "{\"inputs\":[{" + x + ",\"shape\":[2,256],\"data\":[" + data256
                        + "]}]}", -1, null, "has 256 values in data; shape [2, 256] has 512"),
                new Bad("shape not the model's", 400, "{\"inputs\":[{" + x + ",\"shape\":[1,255],\"data\":[" + zeros(255)
                        + "]}]}", -1, null, "model mlp takes [batch >= 1, 256]"),
                new Bad("rank not the model's", 400, "{\"inputs\":[{" + x + ",\"shape\":[256],\"data\":[" + data256 + "]}]}",
                        -1, null, "model mlp takes"),
                new Bad("no rows", 400, "{\"inputs\":[{" + x + ",\"shape\":[0,256],\"data\":[]}]}", -1, null, "batch >= 1"),
                new Bad("negative dimension", 400, "{\"inputs\":[{" + x + ",\"shape\":[-1,256],\"data\":[" + data256 + "]}]}",
                        -1, null, "dimension -1 is negative"),
                new Bad("overflowing dimensions", 400, "{\"inputs\":[{" + x + ",\"shape\":[4611686018427387904,4611686018427387904],"
                        + "\"data\":[1]}]}", -1, null, "more elements than a long counts"),
                new Bad("dimension out of range", 400, "{\"inputs\":[{" + x + ",\"shape\":[99999999999999999999,256],"
                        + "\"data\":[1]}]}", -1, null, "out of range"),
                new Bad("a string in data", 400, "{\"inputs\":[{" + x + ",\"shape\":[1,2],\"data\":[1,\"a\"]}]}", -1, null,
                        "model mlp takes"),
                new Bad("strings as data", 400, "{\"inputs\":[{" + x + ",\"shape\":[1,256],\"data\":[\"a\"" + ",0".repeat(255)
                        + "]}]}", -1, null, "where numbers are expected"),
                new Bad("unknown input", 400, "{\"inputs\":[{\"name\":\"z\",\"datatype\":\"FP32\",\"shape\":[1,256],\"data\":["
                        + data256 + "]}]}", -1, null, "no input 'z'"),
                new Bad("unknown output", 400, "{\"inputs\":[{" + x + ",\"shape\":[1,256],\"data\":[" + data256
                        + "]}],\"outputs\":[{\"name\":\"logits\"}]}", -1, null, "no output 'logits'"),
                new Bad("no inputs", 400, "{\"id\":\"1\"}", -1, null, "no inputs"),
                new Bad("binary data truncated", 400, bin1024, bin1024.length(), new byte[512], "truncated binary data"),
                new Bad("binary data longer than announced", 400, bin1024, bin1024.length(), new byte[1025], "1 bytes after"),
                new Bad("binary_data_size not the shape's", 400, bin1024.replace("1024", "1020"), bin1024.length(),
                        new byte[1020], "shape [1, 256] of FP32 has 1024 bytes"),
                new Bad("binary without the header: all of it read as JSON", 400, bin1024, -2, new byte[1024], "malformed JSON"),
                new Bad("binary_data_size without the header", 400, bin1024, -2, new byte[0],
                        "no Inference-Header-Content-Length"),
                new Bad("header longer than the body", 400, bin1024, 1 << 20, new byte[1024], "larger than the body"),
                new Bad("unknown model", 404, "{\"inputs\":[]}", -1, null, "unknown model"));
        float[] x1 = random(256, 6);
        float[] want = reference("mlp", x1, 1, 256);
        byte[][] good = binaryRequest(x1, 1, 256, true);
        for (Bad b : bad) {
            byte[] json = b.body.getBytes(StandardCharsets.UTF_8);
            byte[] body = b.binary == null ? json : concat(json, b.binary);
            long header = b.headerLength == -2 ? -1 : b.headerLength;
            String model = b.status == 404 ? "mlp2" : "mlp";
            HttpResponse<byte[]> r = post(server, model, body, header);
            String answer = new String(r.body(), StandardCharsets.UTF_8);
            assertEquals(b.status, r.statusCode(), b.what + ": " + answer);
            assertTrue(answer.startsWith("{\"error\":\"") && answer.contains(b.errorPart),
                    b.what + ": the error body " + answer + " should name '" + b.errorPart + "'");
            assertClose(want, binaryOutput(post(server, "mlp", good[0], good[1].length)), "right after " + b.what);
        }
        String stats = get(server, "/admin/stats").body();
        assertTrue(number(stats, "bad_requests") >= bad.size() - 1, stats);
    }

    @Test
    void aBodyOverTheSizeLimitIs400() throws Exception {
        byte[] body = new byte[(MAX_BODY_MB << 20) + 1];
        HttpResponse<byte[]> r = post(server, "mlp", body, -1);
        assertEquals(400, r.statusCode());
        assertTrue(new String(r.body(), StandardCharsets.UTF_8).contains("more than the limit of " + (MAX_BODY_MB << 20)));
        float[] x = random(256, 7);
        byte[][] good = binaryRequest(x, 1, 256, true);
        assertClose(reference("mlp", x, 1, 256), binaryOutput(post(server, "mlp", good[0], good[1].length)),
                "right after");
    }

    @Test
    void theModelRaisingIs500WithPythonsTypeAndMessage() throws Exception {
        py.exec("""
                original_forward = torch.nn.Sequential.forward
                def failing_forward(self, x):
                    raise ValueError("the weights are on holiday")
                torch.nn.Sequential.forward = failing_forward
                """);
        float[] x = random(256, 8);
        byte[][] request = binaryRequest(x, 1, 256, true);
        HttpResponse<byte[]> r;
        try {
            r = post(server, "mlp", request[0], request[1].length);
        } finally {
            py.exec("torch.nn.Sequential.forward = original_forward");
        }
        assertEquals(500, r.statusCode());
        assertEquals("{\"error\":\"the model raised ValueError: the weights are on holiday\"}",
                new String(r.body(), StandardCharsets.UTF_8));
        assertClose(reference("mlp", x, 1, 256), binaryOutput(post(server, "mlp", request[0], request[1].length)),
                "after the model raised");
    }

    // ---------------------------------------------------------------- 64 clients

    @Test
    void sixtyFourConcurrentClientsEachGetTheirOwnAnswers() throws Exception {
        for (ServeTorch s : List.of(server, batching)) {
            int clients = 64;
            int each = 8;
            List<float[]> inputs = new ArrayList<>();
            List<float[]> wants = new ArrayList<>();
            for (int i = 0; i < clients * each; i++) {
                int rows = 1 + i % 3;
                float[] x = random(rows * 256, 100 + i);
                inputs.add(x);
                wants.add(reference("mlp", x, rows, 256));
            }
            long batchesBefore = number(get(s, "/admin/stats").body(), "batches");
            try (ExecutorService pool = Executors.newFixedThreadPool(clients)) {
                List<Future<?>> done = new ArrayList<>();
                for (int c = 0; c < clients; c++) {
                    int client = c;
                    done.add(pool.submit(() -> {
                        for (int k = 0; k < each; k++) {
                            int i = client * each + k;
                            int rows = 1 + i % 3;
                            float[] got;
                            if (i % 2 == 0) {
                                byte[][] b = binaryRequest(inputs.get(i), rows, 256, true);
                                got = binaryOutput(post(s, "mlp", b[0], b[1].length));
                            } else {
                                got = jsonOutput(post(s, "mlp", jsonRequest(inputs.get(i), rows, 256, false), -1));
                            }
                            assertClose(wants.get(i), got, "client " + client + ", request " + k);
                        }
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get(120, TimeUnit.SECONDS);
                }
            }
            long batches = number(get(s, "/admin/stats").body(), "batches") - batchesBefore;
            if (s == batching) {
                assertTrue(batches < clients * each, "batching ran " + batches + " model calls for " + clients * each
                        + " requests");
            } else {
                assertEquals(clients * each, batches);
            }
        }
    }

    // ---------------------------------------------------------------- clients that go away

    @Test
    void clientsThatDisconnectMidRequestLeaveNothingBehind() throws Exception {
        float[] x = random(2 * 3 * 224 * 224, 9);
        byte[][] resnet = binaryRequest(x, 2, 3 * 224 * 224, true, 3, 224, 224);
        post(server, "resnet18", resnet[0], resnet[1].length);   // warm: every buffer made
        String before = get(server, "/admin/stats").body();
        for (int i = 0; i < 10; i++) {
            try (Socket s = new Socket("127.0.0.1", server.port())) {   // half a body, then gone
                OutputStream out = s.getOutputStream();
                out.write(("POST /v2/models/resnet18/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
                        + resnet[0].length + "\r\nInference-Header-Content-Length: " + resnet[1].length
                        + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(resnet[0], 0, resnet[0].length / 2);
                out.flush();
            }
            try (Socket s = new Socket("127.0.0.1", server.port())) {   // all of it, gone before the answer
                OutputStream out = s.getOutputStream();
                out.write(("POST /v2/models/resnet18/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
                        + resnet[0].length + "\r\nInference-Header-Content-Length: " + resnet[1].length
                        + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(resnet[0]);
                out.flush();
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        String after;
        do {
            Thread.sleep(200);
            after = get(server, "/admin/stats").body();
        } while (number(after, "in_flight") > 0 && System.nanoTime() < deadline);
        assertEquals(0, number(after, "in_flight"), after);
        assertEquals(number(before, "live_exports"), number(after, "live_exports"), before + "\n" + after);
        assertEquals(number(before, "native_bytes"), number(after, "native_bytes"), before + "\n" + after);
        assertClose(reference("resnet18", x, 2, 3, 224, 224),
                binaryOutput(post(server, "resnet18", resnet[0], resnet[1].length)), "after the disconnects");
    }

    // ---------------------------------------------------------------- helpers

    static float[] random(int n, long seed) {
        Random r = new Random(seed);
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) r.nextGaussian();
        }
        return a;
    }

    /** torch's own answer, in this interpreter, with the service's weights. */
    static float[] reference(String model, float[] x, long... shape) {
        try (Tensor t = Tensor.of(x, shape);
             PyObject shared = PythonDlpack.toPython(t);
             PyObject reference = py.getGlobal("reference");
             PyObject y = py.withGil(() -> reference.call(model, shared));
             ManagedTensor out = PythonDlpack.fromDlpack(y)) {
            return out.tensor().toFloatArray();
        }
    }

    static String zeros(int n) {
        return String.join(",", java.util.Collections.nCopies(n, "0"));
    }

    static byte[] jsonRequest(float[] x, int rows, int row, boolean binaryOut, long... rowShape) {
        StringBuilder b = new StringBuilder("{\"id\":\"t\",\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":")
                .append(shape(rows, row, rowShape)).append(",\"data\":[");
        for (int i = 0; i < x.length; i++) {
            b.append(i == 0 ? "" : ",").append(x[i]);
        }
        b.append("]}]");
        if (binaryOut) {
            b.append(",\"parameters\":{\"binary_data_output\":true}");
        }
        return b.append('}').toString().getBytes(StandardCharsets.UTF_8);
    }

    private static String shape(int rows, int row, long... rowShape) {
        if (rowShape.length == 0) {
            return row == 3 * 224 * 224 ? "[" + rows + ",3,224,224]" : "[" + rows + "," + row + "]";
        }
        StringBuilder s = new StringBuilder("[").append(rows);
        for (long d : rowShape) {
            s.append(',').append(d);
        }
        return s.append(']').toString();
    }

    /** {@return the body and, second, the JSON header of a binary request} */
    static byte[][] binaryRequest(float[] x, int rows, int row, boolean binaryOut, long... rowShape) {
        String header = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":" + shape(rows, row, rowShape)
                + ",\"parameters\":{\"binary_data_size\":" + x.length * 4 + "}}],\"outputs\":[{\"name\":\"y\","
                + "\"parameters\":{\"binary_data\":" + binaryOut + "}}]}";
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        byte[] body = Arrays.copyOf(h, h.length + x.length * 4);
        ByteBuffer.wrap(body, h.length, x.length * 4).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().put(x);
        return new byte[][] {body, h};
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] c = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    static HttpResponse<byte[]> post(ServeTorch s, String model, byte[] body, long headerLength)
            throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + "/v2/models/" + model
                + "/infer")).timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofByteArray(body));
        if (headerLength >= 0) {
            b.header("Inference-Header-Content-Length", Long.toString(headerLength));
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    static HttpResponse<String> get(ServeTorch s, String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + path))
                .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static final Pattern DATA = Pattern.compile("\"data\":\\[([^\\]]*)\\]");

    static float[] jsonOutput(HttpResponse<byte[]> r) {
        String body = new String(r.body(), StandardCharsets.UTF_8);
        assertEquals(200, r.statusCode(), body);
        assertTrue(r.headers().firstValue("Inference-Header-Content-Length").isEmpty(), "a JSON answer has no header length");
        Matcher m = DATA.matcher(body);
        assertTrue(m.find(), body);
        String[] parts = m.group(1).split(",");
        float[] a = new float[parts.length];
        for (int i = 0; i < a.length; i++) {
            a[i] = Float.parseFloat(parts[i]);
        }
        return a;
    }

    static float[] binaryOutput(HttpResponse<byte[]> r) {
        assertEquals(200, r.statusCode(), () -> new String(r.body(), StandardCharsets.UTF_8));
        int header = Integer.parseInt(r.headers().firstValue("Inference-Header-Content-Length").orElseThrow());
        String json = new String(r.body(), 0, header, StandardCharsets.UTF_8);
        int size = (int) number(json, "binary_data_size");
        assertEquals(r.body().length - header, size, json);
        assertTrue(json.matches("\\{\"model_name\":\"\\w+\",\"model_version\":\"1\",(\"id\":\"\\w+\",)?\"outputs\":\\[\\{\"name\":\"y\","
                + "\"datatype\":\"FP32\",\"shape\":\\[\\d+,\\d+\\],\"parameters\":\\{\"binary_data_size\":\\d+}}]}"), json);
        float[] a = new float[size / 4];
        ByteBuffer.wrap(r.body(), header, size).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(a);
        return a;
    }

    static long number(String json, String field) {
        Matcher m = Pattern.compile("\"" + field + "\":(-?\\d+)").matcher(json);
        if (!m.find()) {
            fail("no " + field + " in " + json);
        }
        return Long.parseLong(m.group(1));
    }

    static void assertClose(float[] want, float[] got, String what) {
        assertEquals(want.length, got.length, what + ": length");
        for (int i = 0; i < want.length; i++) {
            float tolerance = 1e-5f * Math.max(1, Math.abs(want[i]));
            if (Math.abs(want[i] - got[i]) > tolerance) {
                fail(what + ": element " + i + " is " + got[i] + ", torch says " + want[i]);
            }
        }
    }
}
