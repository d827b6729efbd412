package example.serve.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The services' tests' side of the Open Inference Protocol: requests made as a v2 client makes them
 * (JSON, or JSON and binary data), sent with the JDK's HTTP client over HTTP/1.1 to 127.0.0.1, and
 * their answers read and checked.
 */
public final class V2Client {
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();
    private static final Pattern DATA = Pattern.compile("\"data\":\\[([^\\]]*)\\]");

    private V2Client() {
    }

    /** {@return the client every request here goes through} */
    public static HttpClient http() {
        return HTTP;
    }

    /**
     * POSTs an inference request.
     *
     * @param headerLength the {@code Inference-Header-Content-Length} to send; -1 for none
     * @return the answer
     */
    public static HttpResponse<byte[]> post(int port, String model, byte[] body, long headerLength)
            throws IOException, InterruptedException {
        return HTTP.send(inferRequest(port, model, body, headerLength), HttpResponse.BodyHandlers.ofByteArray());
    }

    /** {@return an inference request of {@code body}, with {@code Inference-Header-Content-Length} unless -1} */
    public static HttpRequest inferRequest(int port, String model, byte[] body, long headerLength) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v2/models/" + model
                + "/infer")).timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofByteArray(body));
        if (headerLength >= 0) {
            b.header(InferenceProtocol.INFERENCE_HEADER_CONTENT_LENGTH, Long.toString(headerLength));
        }
        return b.build();
    }

    /** {@return the answer to {@code GET path}} */
    public static HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** {@return {@code n} floats from a normal distribution, the same for the same seed} */
    public static float[] random(int n, long seed) {
        Random r = new Random(seed);
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) r.nextGaussian();
        }
        return a;
    }

    /** {@return {@code n} zeros, as the items of a JSON array} */
    public static String zeros(int n) {
        return String.join(",", Collections.nCopies(n, "0"));
    }

    /**
     * {@return a JSON request of {@code x}, {@code rows} rows of {@code row} values}
     *
     * @param binaryOut whether it asks for binary output ({@code binary_data_output})
     * @param rowShape  a row's shape; none: {@code [row]}, or {@code [3, 224, 224]} for resnet18's rows
     */
    public static byte[] jsonRequest(float[] x, int rows, int row, boolean binaryOut, long... rowShape) {
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

    /** {@return the body and, second, the JSON header of a binary request of {@code x}, as {@link #jsonRequest} shapes it} */
    public static byte[][] binaryRequest(float[] x, int rows, int row, boolean binaryOut, long... rowShape) {
        String header = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":" + shape(rows, row, rowShape)
                + ",\"parameters\":{\"binary_data_size\":" + x.length * 4 + "}}],\"outputs\":[{\"name\":\"y\","
                + "\"parameters\":{\"binary_data\":" + binaryOut + "}}]}";
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        byte[] body = Arrays.copyOf(h, h.length + x.length * 4);
        ByteBuffer.wrap(body, h.length, x.length * 4).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().put(x);
        return new byte[][] {body, h};
    }

    /** {@return {@code a} then {@code b}} */
    public static byte[] concat(byte[] a, byte[] b) {
        byte[] c = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    /** {@return the output's values of a 200 JSON answer} */
    public static float[] jsonOutput(HttpResponse<byte[]> r) {
        String body = new String(r.body(), StandardCharsets.UTF_8);
        assertEquals(200, r.statusCode(), body);
        assertTrue(r.headers().firstValue(InferenceProtocol.INFERENCE_HEADER_CONTENT_LENGTH).isEmpty(),
                "a JSON answer has no header length");
        Matcher m = DATA.matcher(body);
        assertTrue(m.find(), body);
        String[] parts = m.group(1).split(",");
        float[] a = new float[parts.length];
        for (int i = 0; i < a.length; i++) {
            a[i] = Float.parseFloat(parts[i]);
        }
        return a;
    }

    /** {@return the output's values of a 200 answer with binary data, its JSON checked} */
    public static float[] binaryOutput(HttpResponse<byte[]> r) {
        assertEquals(200, r.statusCode(), () -> new String(r.body(), StandardCharsets.UTF_8));
        int header = Integer.parseInt(r.headers().firstValue(InferenceProtocol.INFERENCE_HEADER_CONTENT_LENGTH)
                .orElseThrow());
        String json = new String(r.body(), 0, header, StandardCharsets.UTF_8);
        int size = (int) number(json, "binary_data_size");
        assertEquals(r.body().length - header, size, json);
        assertTrue(json.matches("\\{\"model_name\":\"\\w+\",\"model_version\":\"1\",(\"id\":\"\\w+\",)?\"outputs\":\\[\\{\"name\":\"y\","
                + "\"datatype\":\"FP32\",\"shape\":\\[\\d+,\\d+\\],\"parameters\":\\{\"binary_data_size\":\\d+}}]}"), json);
        float[] a = new float[size / 4];
        ByteBuffer.wrap(r.body(), header, size).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(a);
        return a;
    }

    /** {@return the integer {@code field} of {@code json}; fails the test without it} */
    public static long number(String json, String field) {
        Matcher m = Pattern.compile("\"" + field + "\":(-?\\d+)").matcher(json);
        if (!m.find()) {
            fail("no " + field + " in " + json);
        }
        return Long.parseLong(m.group(1));
    }

    /** Fails unless each of {@code got} is within 1e-5 (relative, past 1) of {@code want}'s. */
    public static void assertClose(float[] want, float[] got, String what) {
        assertEquals(want.length, got.length, what + ": length");
        for (int i = 0; i < want.length; i++) {
            float tolerance = 1e-5f * Math.max(1, Math.abs(want[i]));
            if (Math.abs(want[i] - got[i]) > tolerance) {
                fail(what + ": element " + i + " is " + got[i] + ", torch says " + want[i]);
            }
        }
    }
}
