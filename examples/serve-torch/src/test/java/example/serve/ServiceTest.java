package example.serve;

import static example.serve.protocol.V2Client.assertClose;
import static example.serve.protocol.V2Client.binaryOutput;
import static example.serve.protocol.V2Client.binaryRequest;
import static example.serve.protocol.V2Client.jsonOutput;
import static example.serve.protocol.V2Client.jsonRequest;
import static example.serve.protocol.V2Client.number;
import static example.serve.protocol.V2Client.random;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import example.serve.protocol.BadRequests;
import example.serve.protocol.Clients;
import example.serve.protocol.InferenceProtocol;
import example.serve.protocol.ServeOptions;
import example.serve.protocol.TorchReference;
import example.serve.protocol.V2Client;
import io.github.dlpack4j.python.Python;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
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
    static TorchReference torch;

    @BeforeAll
    static void start() {
        server = ServeTorch.start(ServeOptions.parse("--model", "mlp,resnet18", "--port", "0", "--max-batch", "4",
                "--max-body-mb", String.valueOf(MAX_BODY_MB)));
        batching = ServeTorch.start(ServeOptions.parse("--model", "mlp", "--port", "0", "--batching",
                "--batch-window-us", "5000", "--max-batch", "16"));
        torch = new TorchReference(Python.start());
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
    void withoutBatchingTheVirtualThreadsGetTheCoresTheRunnerThreadsLeaveAndWithBatchingEveryCore() {
        int cores = Runtime.getRuntime().availableProcessors();
        assertEquals(Math.max(1, cores - 1), ServeOptions.parse("--model", "mlp").virtualThreadCarriers());
        assertEquals(Math.max(1, cores - 3), ServeOptions.parse("--model", "mlp", "--runner-threads", "3")
                .virtualThreadCarriers());
        assertEquals(Math.max(1, cores - 2), ServeOptions.parse("--model", "mlp,resnet18", "--runner-threads", "1")
                .virtualThreadCarriers());
        assertEquals(0, ServeOptions.parse("--model", "mlp", "--batching").virtualThreadCarriers(), "the JVM's default");
    }

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
        torch.python().exec("torch.save(serve_models.build('mlp', seed=1).state_dict(), "
                + InferenceProtocol.quote(weights.toString()) + ")\nreferences['mlp1'] = serve_models.build('mlp', weights="
                + InferenceProtocol.quote(weights.toString()) + ")");
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

    @Test
    void badRequestsGetTheirStatusAndTheServiceAnswersRightAfter() throws Exception {
        int sent = BadRequests.assertEachRefusedAndTheServiceAnswersRightAfter(server.port(), torch);
        String stats = get(server, "/admin/stats").body();
        assertTrue(number(stats, "bad_requests") >= sent - 1, stats);
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
        BadRequests.assertTheModelRaisingIs500WithPythonsTypeAndMessage(server.port(), torch);
    }

    // ---------------------------------------------------------------- 64 clients

    @Test
    void sixtyFourConcurrentClientsEachGetTheirOwnAnswers() throws Exception {
        for (ServeTorch s : List.of(server, batching)) {
            int clients = 64;
            int each = 8;
            long batches = Clients.assertEachGetsItsOwnAnswers(s.port(), torch, clients, each);
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
        Clients.assertThoseThatGoAwayLeaveNothingBehind(server.port(), torch);
    }

    // ---------------------------------------------------------------- helpers

    /** torch's own answer, in this interpreter, with the service's weights. */
    static float[] reference(String model, float[] x, long... shape) {
        return torch.reference(model, x, shape);
    }

    static HttpResponse<byte[]> post(ServeTorch s, String model, byte[] body, long headerLength)
            throws IOException, InterruptedException {
        return V2Client.post(s.port(), model, body, headerLength);
    }

    static HttpResponse<String> get(ServeTorch s, String path) throws IOException, InterruptedException {
        return V2Client.get(s.port(), path);
    }
}
