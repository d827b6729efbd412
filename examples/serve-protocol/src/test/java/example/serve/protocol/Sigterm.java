package example.serve.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * SIGTERM to a service serving resnet18 while four requests of two images run: those in flight
 * are answered, requests that came after it are refused (503), never cut off, and the service exits
 * with status 0 within 10 s, saying that it answered every request in flight.
 */
public final class Sigterm {
    private Sigterm() {
    }

    /**
     * What SIGTERM left.
     *
     * @param answered how many of the four requests got their answer
     * @param tookMs   from SIGTERM to the service's exit
     */
    public record Outcome(int answered, long tookMs) {}

    /**
     * Sends four resnet18 requests, waits until {@code inFlight} of them are in flight (the
     * service's {@code /admin/stats}), sends SIGTERM, and checks what it left.
     *
     * @param service  a service started with {@code --model resnet18}
     * @param inFlight how many requests must be in flight before SIGTERM (and be answered)
     * @return the answers and the time to exit
     */
    public static Outcome assertInFlightAnsweredAndExitZero(ServeProcess service, int inFlight) throws Exception {
        int rows = 2;
        String header = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[" + rows + ",3,224,224],"
                + "\"parameters\":{\"binary_data_size\":" + rows * 3 * 224 * 224 * 4 + "}}],"
                + "\"outputs\":[{\"name\":\"y\",\"parameters\":{\"binary_data\":true}}]}";
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        byte[] body = Arrays.copyOf(h, h.length + rows * 3 * 224 * 224 * 4);
        ByteBuffer.wrap(body, h.length, body.length - h.length).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer()
                .put(V2Client.random(rows * 3 * 224 * 224, 1));
        HttpRequest request = V2Client.inferRequest(service.port(), "resnet18", body, h.length);
        List<CompletableFuture<HttpResponse<byte[]>>> sent = new ArrayList<>();
        for (int i = 0; i < 4; i++) {   // 8 images on 2 threads: a second or more of work
            sent.add(V2Client.http().sendAsync(request, HttpResponse.BodyHandlers.ofByteArray()));
        }
        HttpRequest stats = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + service.port() + "/admin/stats"))
                .timeout(Duration.ofSeconds(30)).build();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (V2Client.number(V2Client.http().send(stats, HttpResponse.BodyHandlers.ofString()).body(), "in_flight")
                < inFlight) {
            assertTrue(System.nanoTime() < deadline, "not " + inFlight + " requests in flight within 30 s");
            Thread.sleep(20);
        }
        long signalled = System.nanoTime();
        service.sigterm();
        int status = service.exitStatus(10);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - signalled);
        assertEquals(0, status, "exit status after SIGTERM; output: " + service.lines());
        int answered = 0;
        for (CompletableFuture<HttpResponse<byte[]>> f : sent) {
            HttpResponse<byte[]> r = f.get(10, TimeUnit.SECONDS);
            String text = new String(r.body(), StandardCharsets.UTF_8);
            if (r.statusCode() == 200) {
                answered++;
                int json = Integer.parseInt(r.headers().firstValue(InferenceProtocol.INFERENCE_HEADER_CONTENT_LENGTH)
                        .orElseThrow());
                assertEquals(rows * 1000 * 4, r.body().length - json, "the answer's binary data");
            } else {
                // a request that reached the server after SIGTERM: refused, never cut off
                assertEquals(503, r.statusCode(), text);
            }
        }
        assertTrue(answered >= inFlight, answered + " of the " + inFlight + " requests in flight were answered");
        List<String> lines = service.lines();
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("serve-torch: stopped on SIGTERM, every request in "
                + "flight answered")), "output: " + lines);
        return new Outcome(answered, tookMs);
    }
}
