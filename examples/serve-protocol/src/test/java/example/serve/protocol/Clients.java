package example.serve.protocol;

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

import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Many clients at once, and clients that go away: what every service must take. */
public final class Clients {
    private Clients() {
    }

    /**
     * {@code clients} clients at once, each sending {@code each} requests of 1-3 rows to {@code mlp}
     * (binary and JSON in turn), each answer checked against torch's for its own input.
     *
     * @return the model calls the service made for them ({@code batches} of {@code /admin/stats})
     */
    public static long assertEachGetsItsOwnAnswers(int port, TorchReference torch, int clients, int each)
            throws Exception {
        List<float[]> inputs = new ArrayList<>();
        List<float[]> wants = new ArrayList<>();
        for (int i = 0; i < clients * each; i++) {
            int rows = 1 + i % 3;
            float[] x = random(rows * 256, 100 + i);
            inputs.add(x);
            wants.add(torch.reference("mlp", x, rows, 256));
        }
        long batchesBefore = number(get(port, "/admin/stats").body(), "batches");
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
                            got = binaryOutput(post(port, "mlp", b[0], b[1].length));
                        } else {
                            got = jsonOutput(post(port, "mlp", jsonRequest(inputs.get(i), rows, 256, false), -1));
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
        return number(get(port, "/admin/stats").body(), "batches") - batchesBefore;
    }

    /**
     * Ten clients that send half a resnet18 request's body and go away, and ten that send all of it
     * and go away before the answer; then checks that no request is left in flight, that dlpack4j's
     * live exports and native bytes are back where they were, and that the service still answers.
     */
    public static void assertThoseThatGoAwayLeaveNothingBehind(int port, TorchReference torch) throws Exception {
        float[] x = random(2 * 3 * 224 * 224, 9);
        byte[][] resnet = binaryRequest(x, 2, 3 * 224 * 224, true, 3, 224, 224);
        post(port, "resnet18", resnet[0], resnet[1].length);   // warm: every buffer made
        String before = settled(port);
        String head = "POST /v2/models/resnet18/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
                + resnet[0].length + "\r\n" + InferenceProtocol.INFERENCE_HEADER_CONTENT_LENGTH + ": " + resnet[1].length
                + "\r\n\r\n";
        for (int i = 0; i < 10; i++) {
            try (Socket s = new Socket("127.0.0.1", port)) {   // half a body, then gone
                OutputStream out = s.getOutputStream();
                out.write(head.getBytes(StandardCharsets.US_ASCII));
                out.write(resnet[0], 0, resnet[0].length / 2);
                out.flush();
            }
            try (Socket s = new Socket("127.0.0.1", port)) {   // all of it, gone before the answer
                OutputStream out = s.getOutputStream();
                out.write(head.getBytes(StandardCharsets.US_ASCII));
                out.write(resnet[0]);
                out.flush();
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        String after;
        do {
            Thread.sleep(200);
            after = get(port, "/admin/stats").body();
        } while (number(after, "in_flight") > 0 && System.nanoTime() < deadline);
        assertEquals(0, number(after, "in_flight"), after);
        after = settled(port);
        // Nothing more than before: an earlier test's export that Python still held (a traceback the
        // model's error left, freed when its Java exception is collected) may go meanwhile.
        assertTrue(number(after, "live_exports") <= number(before, "live_exports"), before + "\n" + after);
        assertTrue(number(after, "native_bytes") <= number(before, "native_bytes"), before + "\n" + after);
        assertClose(torch.reference("resnet18", x, 2, 3, 224, 224),
                binaryOutput(post(port, "resnet18", resnet[0], resnet[1].length)), "after the disconnects");
    }

    /**
     * {@return {@code /admin/stats} once dlpack4j's live exports and native bytes read the same twice
     * 100 ms apart (at most 5 s)}: a tensor closed without the GIL is released by dlpack4j's flusher
     * a few ms later, so a request answered just before may still count
     */
    private static String settled(int port) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        String last = get(port, "/admin/stats").body();
        while (System.nanoTime() < deadline) {
            Thread.sleep(100);
            String now = get(port, "/admin/stats").body();
            if (number(now, "live_exports") == number(last, "live_exports")
                    && number(now, "native_bytes") == number(last, "native_bytes")) {
                return now;
            }
            last = now;
        }
        return last;
    }
}
