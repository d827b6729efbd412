package example.serve.protocol;

import static example.serve.protocol.V2Client.assertClose;
import static example.serve.protocol.V2Client.binaryOutput;
import static example.serve.protocol.V2Client.binaryRequest;
import static example.serve.protocol.V2Client.concat;
import static example.serve.protocol.V2Client.post;
import static example.serve.protocol.V2Client.random;
import static example.serve.protocol.V2Client.zeros;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The bad inference requests every service must refuse with a status and a v2 error body, and the
 * check that sends each to a service serving {@code mlp}, with a right request after each.
 */
public final class BadRequests {
    private BadRequests() {
    }

    /**
     * A bad request and what it must get.
     *
     * @param what         what is wrong with it
     * @param status       the status it must get
     * @param body         its JSON
     * @param headerLength its {@code Inference-Header-Content-Length}; -1: none, -2: none although it has binary data
     * @param binary       the bytes after the JSON, or null
     * @param errorPart    what the error body must say
     */
    public record Bad(String what, int status, String body, long headerLength, byte[] binary, String errorPart) {}

    /** {@return every bad request, to model {@code mlp} unless the status is 404 (then to a model not served)} */
    public static List<Bad> all() {
        String x = "\"name\":\"x\",\"datatype\":\"FP32\"";
        String data256 = zeros(256);
        String bin1024 = "{\"inputs\":[{" + x + ",\"shape\":[1,256],\"parameters\":{\"binary_data_size\":1024}}]}";
        return List.of(
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
    }

    /**
     * Sends each bad request to the service on {@code port}, checks its status and error body, and
     * after each checks the service's answer to a right request against torch's.
     *
     * @return how many bad requests were sent
     */
    public static int assertEachRefusedAndTheServiceAnswersRightAfter(int port, TorchReference torch) throws Exception {
        List<Bad> bad = all();
        float[] x1 = random(256, 6);
        float[] want = torch.reference("mlp", x1, 1, 256);
        byte[][] good = binaryRequest(x1, 1, 256, true);
        for (Bad b : bad) {
            byte[] json = b.body().getBytes(StandardCharsets.UTF_8);
            byte[] body = b.binary() == null ? json : concat(json, b.binary());
            long header = b.headerLength() == -2 ? -1 : b.headerLength();
            String model = b.status() == 404 ? "mlp2" : "mlp";
            HttpResponse<byte[]> r = post(port, model, body, header);
            String answer = new String(r.body(), StandardCharsets.UTF_8);
            assertEquals(b.status(), r.statusCode(), b.what() + ": " + answer);
            assertTrue(answer.startsWith("{\"error\":\"") && answer.contains(b.errorPart()),
                    b.what() + ": the error body " + answer + " should name '" + b.errorPart() + "'");
            assertClose(want, binaryOutput(post(port, "mlp", good[0], good[1].length)), "right after " + b.what());
        }
        return bad.size();
    }

    /**
     * Makes the served mlp raise (torch's {@code Sequential.forward} replaced in {@code torch}'s
     * interpreter, the service's own), checks that a request is answered 500 with Python's type and
     * message, puts the forward back, and checks the next answer against torch's.
     */
    public static void assertTheModelRaisingIs500WithPythonsTypeAndMessage(int port, TorchReference torch)
            throws Exception {
        torch.python().exec("""
                original_forward = torch.nn.Sequential.forward
                def failing_forward(self, x):
                    raise ValueError("the weights are on holiday")
                torch.nn.Sequential.forward = failing_forward
                """);
        float[] x = random(256, 8);
        byte[][] request = binaryRequest(x, 1, 256, true);
        HttpResponse<byte[]> r;
        try {
            r = post(port, "mlp", request[0], request[1].length);
        } finally {
            torch.python().exec("torch.nn.Sequential.forward = original_forward");
        }
        assertEquals(500, r.statusCode());
        assertEquals("{\"error\":\"the model raised ValueError: the weights are on holiday\"}",
                new String(r.body(), StandardCharsets.UTF_8));
        assertClose(torch.reference("mlp", x, 1, 256), binaryOutput(post(port, "mlp", request[0], request[1].length)),
                "after the model raised");
    }
}
