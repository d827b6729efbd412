package example.serve;

import static example.serve.ProtocolException.badRequest;

import example.serve.ModelRunner.ModelSpec;
import example.serve.ModelRunner.Result;
import example.serve.ModelRunner.TensorSpec;
import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.http.HeaderValues;
import io.helidon.http.Status;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The Open Inference Protocol (KServe v2) endpoints over HTTP, on Helidon SE's virtual threads:
 * health, server and model metadata, and inference with JSON tensors and the binary tensor data
 * extension; and {@code GET /admin/stats}. Each handler reads and checks its request in Java and
 * hands the model's part to the {@link ModelRunner}.
 */
final class InferenceService {
    static final HeaderName INFERENCE_HEADER_CONTENT_LENGTH = HeaderNames.create("Inference-Header-Content-Length");
    private static final Logger LOG = Logger.getLogger(InferenceService.class.getName());

    private final ModelRunner runner;
    private final ServeOptions options;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicLong badRequests = new AtomicLong();
    private final AtomicLong clientsGone = new AtomicLong();
    private final Object idle = new Object();
    private volatile boolean draining;

    InferenceService(ModelRunner runner, ServeOptions options) {
        this.runner = runner;
        this.options = options;
    }

    /** Adds the endpoints to {@code routing}. */
    void routing(HttpRouting.Builder routing) {
        routing.get("/v2/health/live", (req, res) -> res.send())
                .get("/v2/health/ready", (req, res) -> res.status(draining ? Status.SERVICE_UNAVAILABLE_503 : Status.OK_200)
                        .send())
                .get("/v2", (req, res) -> json(res, 200, "{\"name\":\"serve-torch\",\"version\":\"1.0\","
                        + "\"extensions\":[\"binary_tensor_data\"]}"))
                .get("/v2/models/{name}", this::metadata)
                .get("/v2/models/{name}/ready", (req, res) -> {
                    String name = req.path().pathParameters().get("name");
                    if (!runner.serves(name)) {
                        error(res, new ProtocolException(404, "unknown model '" + name + "'"));
                    } else {
                        res.status(draining ? Status.SERVICE_UNAVAILABLE_503 : Status.OK_200).send();
                    }
                })
                .post("/v2/models/{name}/infer", this::infer)
                .get("/admin/stats", this::stats)
                .any((req, res) -> error(res, new ProtocolException(404, "no endpoint " + req.prologue().method()
                        .text() + " " + req.path().path())));
    }

    private void metadata(ServerRequest req, ServerResponse res) {
        String name = req.path().pathParameters().get("name");
        ModelSpec spec = spec(name);
        if (spec == null) {
            error(res, new ProtocolException(404, "unknown model '" + name + "'"));
            return;
        }
        json(res, 200, "{\"name\":" + quote(name) + ",\"versions\":[\"1\"],\"platform\":\"pytorch_torch\","
                + "\"inputs\":[" + tensorMetadata(spec.input()) + "],\"outputs\":[" + tensorMetadata(spec.output()) + "]}");
    }

    private static String tensorMetadata(TensorSpec t) {
        return "{\"name\":" + quote(t.name()) + ",\"datatype\":" + quote(t.datatype()) + ",\"shape\":"
                + Arrays.toString(t.shape()).replace(" ", "") + "}";
    }

    private ModelSpec spec(String name) {
        for (ModelSpec s : runner.specs()) {
            if (s.name().equals(name)) {
                return s;
            }
        }
        return null;
    }

    private void infer(ServerRequest req, ServerResponse res) {
        String name = req.path().pathParameters().get("name");
        ModelSpec spec = spec(name);
        if (spec == null) {
            error(res, new ProtocolException(404, "unknown model '" + name + "'"));
            return;
        }
        if (draining) {
            error(res, new ProtocolException(503, "the service is shutting down"));
            return;
        }
        inFlight.incrementAndGet();
        runner.arrive(name);
        boolean arrived = true;
        try {
            byte[] body = readBody(req);
            if (body == null) {
                return;   // the client went away while sending: nothing was made for it
            }
            long headerLength = headerLength(req);
            InferRequest request = InferRequest.parse(body, body.length, headerLength);
            InferRequest.Input in = checkInput(spec, request);
            boolean binary = outputAsBinary(spec, request);
            ModelRunner.Work work = new ModelRunner.Work(in.shape(), in.values(), in.body(), in.offset());
            Result result;
            try {
                result = runner.infer(name, work);
            } finally {
                runner.leave(name);
                arrived = false;
            }
            respond(res, spec, request, result, binary);
        } catch (ProtocolException e) {
            if (e.status() == 400) {
                badRequests.incrementAndGet();
            }
            error(res, e);
        } catch (ModelRunner.ModelException e) {
            error(res, new ProtocolException(500, e.getMessage()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            error(res, new ProtocolException(503, "interrupted"));
        } catch (UncheckedIOException e) {
            clientsGone.incrementAndGet();   // the answer could not be written: the client is gone
            LOG.log(Level.FINE, "a client went away", e);
        } finally {
            if (arrived) {
                runner.leave(name);
            }
            if (inFlight.decrementAndGet() == 0 && draining) {
                synchronized (idle) {
                    idle.notifyAll();
                }
            }
        }
    }

    /** {@return the whole body, or null if the client closed the connection before sending it all} */
    private byte[] readBody(ServerRequest req) {
        OptionalLong declared = req.headers().contentLength();
        long max = options.maxBodyBytes();
        if (declared.isPresent() && declared.getAsLong() > max) {
            throw badRequest("the body has " + declared.getAsLong() + " bytes, more than the limit of " + max);
        }
        try (InputStream in = req.content().inputStream()) {
            if (declared.isPresent()) {
                int n = (int) declared.getAsLong();
                byte[] body = in.readNBytes(n);
                if (body.length < n) {
                    clientsGone.incrementAndGet();
                    return null;
                }
                return body;
            }
            byte[] body = in.readNBytes((int) max + 1);   // chunked: read up to the limit
            if (body.length > max) {
                throw badRequest("the body has more than the limit of " + max + " bytes");
            }
            return body;
        } catch (IOException | UncheckedIOException e) {
            clientsGone.incrementAndGet();
            return null;
        } catch (ProtocolException e) {
            throw e;
        } catch (RuntimeException e) {
            // Helidon's reader fails this way when the connection ends inside the body
            clientsGone.incrementAndGet();
            LOG.log(Level.FINE, "the body could not be read", e);
            return null;
        }
    }

    private static long headerLength(ServerRequest req) {
        if (!req.headers().contains(INFERENCE_HEADER_CONTENT_LENGTH)) {
            return -1;
        }
        String v = req.headers().get(INFERENCE_HEADER_CONTENT_LENGTH).get();
        try {
            long n = Long.parseLong(v.trim());
            if (n < 0) {
                throw badRequest("Inference-Header-Content-Length " + v + " is negative");
            }
            return n;
        } catch (NumberFormatException e) {
            throw badRequest("Inference-Header-Content-Length '" + v + "' is not a number");
        }
    }

    /** {@return the model's one input, checked against its spec: name, datatype, shape and size of the data} */
    private static InferRequest.Input checkInput(ModelSpec spec, InferRequest request) {
        TensorSpec want = spec.input();
        InferRequest.Input found = null;
        for (InferRequest.Input in : request.inputs()) {
            if (!in.name().equals(want.name())) {
                throw badRequest("model " + spec.name() + " has no input '" + in.name() + "' (its input is "
                        + want.name() + ")");
            }
            if (found != null) {
                throw badRequest("input " + in.name() + " is given twice");
            }
            found = in;
        }
        if (found == null) {
            throw badRequest("model " + spec.name() + " needs input " + want.name());
        }
        Integer size = InferRequest.DATATYPES.get(found.datatype());
        if (size == null) {
            throw badRequest("unknown datatype '" + found.datatype() + "'");
        }
        if (!found.datatype().equals(want.datatype())) {
            throw badRequest("input " + found.name() + " has datatype " + found.datatype() + "; model " + spec.name()
                    + " takes " + want.datatype());
        }
        long[] shape = found.shape();
        long numel;
        try {
            numel = 1;
            for (long d : shape) {
                numel = Math.multiplyExact(numel, d);
            }
            Math.multiplyExact(numel, (long) size);
        } catch (ArithmeticException e) {
            throw badRequest("shape " + Arrays.toString(shape) + " has more elements than a long counts");
        }
        boolean fits = shape.length == want.shape().length && shape[0] >= 1;
        for (int i = 1; fits && i < shape.length; i++) {
            fits = want.shape()[i] < 0 || want.shape()[i] == shape[i];
        }
        if (!fits) {
            throw badRequest("input " + found.name() + " has shape " + Arrays.toString(shape) + "; model " + spec.name()
                    + " takes " + Arrays.toString(want.shape()).replace("-1", "batch >= 1"));
        }
        if (found.values() != null) {
            if (found.dataProblem() != null) {
                throw badRequest("input " + found.name() + ": " + found.dataProblem());
            }
            if (found.values().length != numel) {
                throw badRequest("input " + found.name() + " has " + found.values().length + " values in data; shape "
                        + Arrays.toString(shape) + " has " + numel);
            }
        } else if (found.binaryDataSize() != numel * size) {
            throw badRequest("input " + found.name() + " has binary_data_size " + found.binaryDataSize() + "; shape "
                    + Arrays.toString(shape) + " of " + found.datatype() + " has " + numel * size + " bytes");
        }
        return found;
    }

    /** {@return whether the output goes back as binary data; checks the outputs asked for} */
    private static boolean outputAsBinary(ModelSpec spec, InferRequest request) {
        boolean binary = request.binaryDataOutput();
        if (request.outputs() != null) {
            for (InferRequest.Output o : request.outputs()) {
                if (!o.name().equals(spec.output().name())) {
                    throw badRequest("model " + spec.name() + " has no output '" + o.name() + "' (its output is "
                            + spec.output().name() + ")");
                }
                if (o.binaryData() != null) {
                    binary = o.binaryData();
                }
            }
        }
        return binary;
    }

    private static void respond(ServerResponse res, ModelSpec spec, InferRequest request, Result result, boolean binary) {
        TensorSpec out = spec.output();
        float[] values = result.values();
        StringBuilder json = new StringBuilder(binary ? 160 : 160 + values.length * 12);
        json.append("{\"model_name\":").append(quote(spec.name())).append(",\"model_version\":\"1\"");
        if (request.id() != null) {
            json.append(",\"id\":").append(quote(request.id()));
        }
        json.append(",\"outputs\":[{\"name\":").append(quote(out.name())).append(",\"datatype\":")
                .append(quote(out.datatype())).append(",\"shape\":[");
        long[] shape = result.shape();
        for (int i = 0; i < shape.length; i++) {
            json.append(i == 0 ? "" : ",").append(shape[i]);
        }
        json.append(']');
        if (binary) {
            int size = values.length * Float.BYTES;
            json.append(",\"parameters\":{\"binary_data_size\":").append(size).append("}}]}");
            byte[] header = json.toString().getBytes(StandardCharsets.UTF_8);
            byte[] body = Arrays.copyOf(header, header.length + size);
            ByteBuffer.wrap(body, header.length, size).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().put(values);
            res.header(INFERENCE_HEADER_CONTENT_LENGTH, Integer.toString(header.length));
            res.header(HeaderValues.CONTENT_TYPE_OCTET_STREAM);
            res.send(body);
        } else {
            json.append(",\"data\":[");
            for (int i = 0; i < values.length; i++) {
                if (i > 0) {
                    json.append(',');
                }
                appendFloat(json, values[i]);
            }
            json.append("]}]}");
            json(res, 200, json.toString());
        }
    }

    /** A float as JSON: the shortest decimal that reads back as the same float; NaN and infinities as Python's json writes them. */
    private static void appendFloat(StringBuilder json, float v) {
        if (Float.isNaN(v)) {
            json.append("NaN");
        } else if (Float.isInfinite(v)) {
            json.append(v > 0 ? "Infinity" : "-Infinity");
        } else {
            json.append(v);
        }
    }

    private void stats(ServerRequest req, ServerResponse res) {
        ModelRunner.Stats s = runner.stats();
        json(res, 200, "{\"live_exports\":" + s.liveExports() + ",\"native_bytes\":" + s.nativeBytes()
                + ",\"in_flight\":" + inFlight.get() + ",\"requests\":" + s.requests() + ",\"batches\":" + s.batches()
                + ",\"batched_rows\":" + s.batchedRows() + ",\"largest_batch\":" + s.largestBatch()
                + ",\"model_errors\":" + s.modelErrors() + ",\"bad_requests\":" + badRequests.get()
                + ",\"clients_gone\":" + clientsGone.get() + ",\"rss_bytes\":" + rssBytes()
                + ",\"settings\":" + quote(options.describe()) + "}");
    }

    /** {@return the process's resident set size from /proc/self/status, or -1} */
    static long rssBytes() {
        try {
            List<String> lines = Files.readAllLines(Path.of("/proc/self/status"));
            for (String l : lines) {
                if (l.startsWith("VmRSS:")) {
                    return Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            LOG.log(Level.FINE, "no VmRSS", e);
        }
        return -1;
    }

    private static void error(ServerResponse res, ProtocolException e) {
        try {
            json(res, e.status(), "{\"error\":" + quote(e.getMessage()) + "}");
        } catch (UncheckedIOException gone) {
            LOG.log(Level.FINE, "a client went away before its error", gone);
        }
    }

    private static void json(ServerResponse res, int status, String json) {
        res.status(status);
        res.header(HeaderValues.CONTENT_TYPE_JSON);
        res.send(json.getBytes(StandardCharsets.UTF_8));
    }

    /** {@return {@code s} as a JSON string} */
    static String quote(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    /** Stops taking inference requests (503 from now on, and from the ready endpoint). */
    void startDraining() {
        draining = true;
    }

    /**
     * Waits until no inference request is in flight, at most {@code millis}.
     *
     * @return whether none is left
     */
    boolean awaitIdle(long millis) throws InterruptedException {
        long deadline = System.currentTimeMillis() + millis;
        synchronized (idle) {
            while (inFlight.get() > 0) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    return false;
                }
                idle.wait(Math.min(left, 50));
            }
        }
        return true;
    }

    /** {@return the inference requests being answered now} */
    int inFlight() {
        return inFlight.get();
    }
}
