package example.serve;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import example.serve.protocol.V2Client;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code scripts/serve} as a user runs it, in a process of its own: SIGTERM while requests run lets
 * each of them finish with its answer, and the service exits with status 0 within 10 s.
 */
class SigtermIT {
    private static final Pattern READY = Pattern.compile("^serve-torch: resnet18 ready on http://127\\.0\\.0\\.1:(\\d+) ");

    @Test
    @Timeout(value = 170, unit = TimeUnit.SECONDS)
    void sigtermAnswersTheRequestsInFlightAndExitsZero() throws Exception {
        Process p = new ProcessBuilder(System.getProperty("serve.script"), "--no-build", "--model", "resnet18",
                "--port", "0").redirectErrorStream(true).start();
        List<String> lines = new ArrayList<>();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            int port = -1;
            for (String line; port < 0 && (line = out.readLine()) != null; ) {
                lines.add(line);
                Matcher m = READY.matcher(line);
                if (m.find()) {
                    port = Integer.parseInt(m.group(1));
                }
            }
            assertTrue(port > 0, "no ready line: " + lines);
            Thread reader = Thread.ofPlatform().daemon().start(() -> out.lines().forEach(l -> {
                synchronized (lines) {
                    lines.add(l);
                }
            }));

            HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            int rows = 2;
            String header = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[" + rows + ",3,224,224],"
                    + "\"parameters\":{\"binary_data_size\":" + rows * 3 * 224 * 224 * 4 + "}}],"
                    + "\"outputs\":[{\"name\":\"y\",\"parameters\":{\"binary_data\":true}}]}";
            byte[] h = header.getBytes(StandardCharsets.UTF_8);
            byte[] body = Arrays.copyOf(h, h.length + rows * 3 * 224 * 224 * 4);
            ByteBuffer.wrap(body, h.length, body.length - h.length).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer()
                    .put(V2Client.random(rows * 3 * 224 * 224, 1));
            HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v2/models/resnet18/infer"))
                    .header("Inference-Header-Content-Length", Integer.toString(h.length))
                    .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofByteArray(body)).build();
            List<CompletableFuture<HttpResponse<byte[]>>> inFlight = new ArrayList<>();
            for (int i = 0; i < 4; i++) {   // 8 images on 2 threads: a second or more of work
                inFlight.add(http.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray()));
            }
            HttpRequest stats = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/admin/stats")).build();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!http.send(stats, HttpResponse.BodyHandlers.ofString()).body().matches(".*\"in_flight\":[1-9].*")) {
                assertTrue(System.nanoTime() < deadline, "no request in flight within 30 s");
                Thread.sleep(20);
            }
            long signalled = System.nanoTime();
            p.toHandle().destroy();   // SIGTERM (Process.destroy() would close our end of its output too)
            assertTrue(p.waitFor(10, TimeUnit.SECONDS), "the service did not exit within 10 s of SIGTERM");
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - signalled);
            assertEquals(0, p.exitValue(), "exit status after SIGTERM; output: " + lines);
            int answered = 0;
            for (CompletableFuture<HttpResponse<byte[]>> f : inFlight) {
                HttpResponse<byte[]> r = f.get(10, TimeUnit.SECONDS);
                String text = new String(r.body(), StandardCharsets.UTF_8);
                if (r.statusCode() == 200) {
                    answered++;
                    int json = Integer.parseInt(r.headers().firstValue("Inference-Header-Content-Length").orElseThrow());
                    assertEquals(rows * 1000 * 4, r.body().length - json, "the answer's binary data");
                } else {
                    // a request that reached the server after SIGTERM: refused, never cut off
                    assertEquals(503, r.statusCode(), text);
                }
            }
            assertTrue(answered >= 1, "no request in flight was answered");
            reader.join(5000);
            synchronized (lines) {
                assertTrue(lines.stream().anyMatch(l -> l.startsWith("serve-torch: stopped on SIGTERM, every request in "
                        + "flight answered")), "output: " + lines);
            }
            System.out.printf("SIGTERM: %d of 4 requests answered, exit 0 after %d ms%n", answered, tookMs);
        } finally {
            p.destroyForcibly();
        }
    }
}
