package example.spring;

import static example.serve.protocol.V2Client.assertClose;
import static example.serve.protocol.V2Client.binaryOutput;
import static example.serve.protocol.V2Client.binaryRequest;
import static example.serve.protocol.V2Client.get;
import static example.serve.protocol.V2Client.post;
import static example.serve.protocol.V2Client.random;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import example.serve.protocol.Clients;
import example.serve.protocol.TorchReference;
import io.github.dlpack4j.python.Python;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The service with mlp batching, set by properties as {@code scripts/serve --spring --batching}
 * sets them: 64 clients at once each get their own right answers from fewer model calls than
 * requests, as the meters count them too, and the settings the service shows are those the starter
 * made the model with.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "spring.profiles.active=mlp",
        "dlpack4j.models.mlp.workers=1",
        "dlpack4j.models.mlp.batching.max-rows=16",
        "dlpack4j.models.mlp.batching.max-delay=5000us"})
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class BatchingTest {
    private static TorchReference torch;

    @LocalServerPort
    int port;

    @BeforeAll
    static void references(@Autowired Python py) {
        torch = new TorchReference(py);
    }

    @Test
    void sixtyFourConcurrentClientsGetTheirOwnAnswersFromFewerModelCalls() throws Exception {
        int requests = 64 * 8;
        Prometheus before = Prometheus.scrape(port);
        long batches = Clients.assertEachGetsItsOwnAnswers(port, torch, 64, 8);
        assertTrue(batches < requests, "batching ran " + batches + " model calls for " + requests + " requests");
        Prometheus after = Prometheus.scrape(port);
        assertEquals(requests, after.since(before, "dlpack4j_model_requests_total", "outcome=\"answered\""));
        assertEquals(batches, after.since(before, "dlpack4j_model_batch_rows_count"), "one rows sample a model call");
        assertEquals(1023, after.since(before, "dlpack4j_model_batch_rows_sum"), "the requests' rows, 1-3 each");
        float[] x = random(256, 11);
        byte[][] one = binaryRequest(x, 1, 256, true);
        assertClose(torch.reference("mlp", x, 1, 256), binaryOutput(post(port, "mlp", one[0], one[1].length)),
                "a lone request");
    }

    @Test
    void theSettingsAreThoseTheModelWasMadeWith() throws Exception {
        assertEquals("torch threads 1, runner threads 1, batching (window 5000 us, max batch 16), seeded weights",
                settings(get(port, "/admin/stats").body()));
    }

    private static String settings(String stats) {
        int at = stats.indexOf("\"settings\":\"") + "\"settings\":\"".length();
        return stats.substring(at, stats.indexOf('"', at));
    }
}
