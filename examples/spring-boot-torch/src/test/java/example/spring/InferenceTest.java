package example.spring;

import static example.serve.protocol.V2Client.assertClose;
import static example.serve.protocol.V2Client.binaryOutput;
import static example.serve.protocol.V2Client.binaryRequest;
import static example.serve.protocol.V2Client.get;
import static example.serve.protocol.V2Client.jsonOutput;
import static example.serve.protocol.V2Client.jsonRequest;
import static example.serve.protocol.V2Client.number;
import static example.serve.protocol.V2Client.post;
import static example.serve.protocol.V2Client.random;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import example.serve.protocol.BadRequests;
import example.serve.protocol.Clients;
import example.serve.protocol.TorchReference;
import io.github.dlpack4j.python.Python;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.ActiveProfiles;

/**
 * The service on a real port, both models configured by application.yml's profiles: answers equal
 * torch run directly in the same interpreter on the same inputs and weights; the v2 endpoints, every
 * bad request and the model raising answered as the Helidon service answers them; Actuator's health
 * with the model's details, and Prometheus's meters counting the requests made.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "serve.max-body-bytes=" + InferenceTest.MAX_BODY_BYTES)
@ActiveProfiles({"mlp", "resnet18"})
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class InferenceTest {
    static final int MAX_BODY_BYTES = 4 << 20;
    private static TorchReference torch;

    @LocalServerPort
    int port;

    @BeforeAll
    static void references(@Autowired Python py) {
        torch = new TorchReference(py);
    }

    // ---------------------------------------------------------------- answers equal torch's

    @Test
    void mlpJsonAndBinaryAnswersEqualTorch() throws Exception {
        float[] x = random(3 * 256, 1);
        float[] want = torch.reference("mlp", x, 3, 256);
        assertClose(want, jsonOutput(post(port, "mlp", jsonRequest(x, 3, 256, false), -1)), "JSON in, JSON out");
        byte[][] binary = binaryRequest(x, 3, 256, true);
        assertClose(want, binaryOutput(post(port, "mlp", binary[0], binary[1].length)), "binary in and out");
        byte[][] jsonOut = binaryRequest(x, 3, 256, false);
        assertClose(want, jsonOutput(post(port, "mlp", jsonOut[0], jsonOut[1].length)), "binary in, JSON out");
        assertClose(want, binaryOutput(post(port, "mlp", jsonRequest(x, 3, 256, true), -1)), "JSON in, binary out");
    }

    @Test
    void resnet18JsonAndBinaryAnswersEqualTorch() throws Exception {
        int row = 3 * 224 * 224;
        float[] one = random(row, 2);
        assertClose(torch.reference("resnet18", one, 1, 3, 224, 224),
                jsonOutput(post(port, "resnet18", jsonRequest(one, 1, row, false), -1)), "JSON");
        float[] two = random(2 * row, 3);
        byte[][] binary = binaryRequest(two, 2, row, true, 3, 224, 224);
        assertClose(torch.reference("resnet18", two, 2, 3, 224, 224),
                binaryOutput(post(port, "resnet18", binary[0], binary[1].length)), "binary");
    }

    // ---------------------------------------------------------------- the v2 endpoints, as Helidon's

    @Test
    void healthMetadataAndUnknownPathsAnswerAsTheHelidonService() throws Exception {
        assertEquals(200, get(port, "/v2/health/live").statusCode());
        assertEquals(200, get(port, "/v2/health/ready").statusCode());
        assertEquals(200, get(port, "/v2/models/mlp/ready").statusCode());
        HttpResponse<String> metadata = get(port, "/v2/models/mlp");
        assertEquals("{\"name\":\"mlp\",\"versions\":[\"1\"],\"platform\":\"pytorch_torch\",\"inputs\":[{\"name\":\"x\","
                + "\"datatype\":\"FP32\",\"shape\":[-1,256]}],\"outputs\":[{\"name\":\"y\",\"datatype\":\"FP32\","
                + "\"shape\":[-1,16]}]}", metadata.body());
        assertEquals("application/json", metadata.headers().firstValue("Content-Type").orElseThrow());
        assertTrue(get(port, "/v2/models/resnet18").body().contains("\"shape\":[-1,3,224,224]"));
        assertEquals("{\"name\":\"serve-torch\",\"version\":\"1.0\",\"extensions\":[\"binary_tensor_data\"]}",
                get(port, "/v2").body());
        HttpResponse<String> unknown = get(port, "/v2/models/resnet50");
        assertEquals(404, unknown.statusCode());
        assertEquals("{\"error\":\"unknown model 'resnet50'\"}", unknown.body());
        assertEquals("{\"error\":\"unknown model 'resnet50'\"}", get(port, "/v2/models/resnet50/ready").body());
        HttpResponse<String> noPath = get(port, "/v3");
        assertEquals(404, noPath.statusCode());
        assertEquals("{\"error\":\"no endpoint GET /v3\"}", noPath.body());
        HttpResponse<String> noMethod = get(port, "/v2/models/mlp/infer");
        assertEquals(404, noMethod.statusCode());
        assertEquals("{\"error\":\"no endpoint GET /v2/models/mlp/infer\"}", noMethod.body());
    }

    // ---------------------------------------------------------------- bad requests

    @Test
    void badRequestsGetTheirStatusAndTheServiceAnswersRightAfter() throws Exception {
        long before = number(get(port, "/admin/stats").body(), "bad_requests");
        int sent = BadRequests.assertEachRefusedAndTheServiceAnswersRightAfter(port, torch);
        assertEquals(sent - 1, number(get(port, "/admin/stats").body(), "bad_requests") - before,
                "every bad request but the unknown model's (404) counted as one");
    }

    @Test
    void aBodyOverTheSizeLimitIs400() throws Exception {
        HttpResponse<byte[]> r = post(port, "mlp", new byte[MAX_BODY_BYTES + 1], -1);
        assertEquals(400, r.statusCode());
        assertEquals("{\"error\":\"the body has " + (MAX_BODY_BYTES + 1) + " bytes, more than the limit of "
                + MAX_BODY_BYTES + "\"}", new String(r.body(), StandardCharsets.UTF_8));
        float[] x = random(256, 7);
        byte[][] good = binaryRequest(x, 1, 256, true);
        assertClose(torch.reference("mlp", x, 1, 256), binaryOutput(post(port, "mlp", good[0], good[1].length)),
                "right after");
    }

    @Test
    void theModelRaisingIs500WithPythonsTypeAndMessage() throws Exception {
        BadRequests.assertTheModelRaisingIs500WithPythonsTypeAndMessage(port, torch);
    }

    // ---------------------------------------------------------------- clients

    @Test
    void sixtyFourConcurrentClientsEachGetTheirOwnAnswers() throws Exception {
        assertEquals(64 * 4, Clients.assertEachGetsItsOwnAnswers(port, torch, 64, 4), "one model call a request");
    }

    @Test
    void clientsThatDisconnectMidRequestLeaveNothingBehind() throws Exception {
        Clients.assertThoseThatGoAwayLeaveNothingBehind(port, torch);
    }

    // ---------------------------------------------------------------- Actuator

    @Test
    void actuatorHealthIsUpWithEachModelsState() throws Exception {
        HttpResponse<String> health = get(port, "/actuator/health");
        assertEquals(200, health.statusCode(), health.body());
        DocumentContext json = JsonPath.parse(health.body());
        assertEquals("UP", json.read("$.status"), health.body());
        assertEquals("UP", json.read("$.components.dlpack4j.status"), health.body());
        for (String model : new String[] {"mlp", "resnet18"}) {
            assertEquals(Map.of("state", "ready", "queued", 0), json.read("$.components.dlpack4j.details." + model),
                    health.body());
        }
    }

    @Test
    void prometheusCountsTheRequestsMade() throws Exception {
        Prometheus before = Prometheus.scrape(port);
        float[] x = random(2 * 256, 10);
        byte[][] binary = binaryRequest(x, 2, 256, true);
        for (int i = 0; i < 5; i++) {
            binaryOutput(post(port, "mlp", binary[0], binary[1].length));
        }
        for (int i = 0; i < 3; i++) {
            jsonOutput(post(port, "mlp", jsonRequest(x, 2, 256, false), -1));
        }
        assertEquals(400, post(port, "mlp", "{\"inputs\": [".getBytes(StandardCharsets.UTF_8), -1).statusCode());
        Prometheus after = Prometheus.scrape(port);
        String mlp = "model=\"mlp\"";
        assertEquals(8, after.since(before, "dlpack4j_model_requests_total", mlp, "outcome=\"answered\""), after.text());
        for (String outcome : new String[] {"failed", "rejected", "timed_out"}) {
            assertEquals(0, after.since(before, "dlpack4j_model_requests_total", mlp, "outcome=\"" + outcome + "\""),
                    outcome);
        }
        assertEquals(8, after.since(before, "dlpack4j_model_run_seconds_count", mlp), "model calls");
        assertEquals(8, after.since(before, "dlpack4j_model_queue_wait_seconds_count", mlp), "queue waits");
        assertEquals(8, after.since(before, "dlpack4j_model_batch_rows_count", mlp), "one rows sample a model call");
        assertTrue(after.text().contains("dlpack4j_model_run_seconds_bucket{"), "the run timer's histogram");
        assertEquals(0, after.value("dlpack4j_model_queue_depth", mlp));
        assertEquals(9, after.since(before, "http_server_requests_seconds_count", "uri=\"/v2/models/{name}/infer\""),
                "Spring's own meter of the requests, the bad one included");
    }
}
