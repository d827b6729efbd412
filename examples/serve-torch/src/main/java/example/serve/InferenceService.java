package example.serve;

import static example.serve.ProtocolException.badRequest;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.model.ModelOverloadedException;
import io.github.dlpack4j.model.ModelStats;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.TensorSpec;
import io.github.dlpack4j.python.PythonException;
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
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CancellationException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The Open Inference Protocol (KServe v2) endpoints over HTTP, on Helidon SE's virtual threads:
 * health, server and model metadata, and inference with JSON tensors and the binary tensor data
 * extension; and {@code GET /admin/stats}. Each handler reads and checks its request in Java, calls
 * the model's {@link PythonModel} with the input in a native tensor, and writes the answer from the
 * output tensor.
 */
final class InferenceService {
    static final HeaderName INFERENCE_HEADER_CONTENT_LENGTH = HeaderNames.create("Inference-Header-Content-Length");
    private static final Logger LOG = Logger.getLogger(InferenceService.class.getName());
    /** The v2 datatypes of the dtypes a model may declare (those of one element a byte or more). */
    private static final Map<String, DataType> V2_DTYPES = Map.ofEntries(Map.entry("BOOL", DataType.BOOL),
            Map.entry("UINT8", DataType.UINT8), Map.entry("UINT16", DataType.UINT16),
            Map.entry("UINT32", DataType.UINT32), Map.entry("UINT64", DataType.UINT64), Map.entry("INT8", DataType.INT8),
            Map.entry("INT16", DataType.INT16), Map.entry("INT32", DataType.INT32), Map.entry("INT64", DataType.INT64),
            Map.entry("FP16", DataType.FLOAT16), Map.entry("FP32", DataType.FLOAT32),
            Map.entry("FP64", DataType.FLOAT64), Map.entry("BF16", DataType.BFLOAT16));

    private final Map<String, PythonModel> models;
    private final ServeOptions options;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicLong badRequests = new AtomicLong();
    private final AtomicLong clientsGone = new AtomicLong();
    private final Object idle = new Object();
    private volatile boolean draining;

    /**
     * @param models  the models served, by name
     * @param options the service's settings
     */
    InferenceService(Map<String, PythonModel> models, ServeOptions options) {
        this.models = models;
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
                    if (!models.containsKey(name)) {
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
        PythonModel model = models.get(name);
        if (model == null) {
            error(res, new ProtocolException(404, "unknown model '" + name + "'"));
            return;
        }
        json(res, 200, "{\"name\":" + quote(name) + ",\"versions\":[\"1\"],\"platform\":\"pytorch_torch\","
                + "\"inputs\":[" + tensorMetadata(input(model)) + "],\"outputs\":[" + tensorMetadata(output(model))
                + "]}");
    }

    private static String tensorMetadata(TensorSpec t) {
        return "{\"name\":" + quote(t.name()) + ",\"datatype\":" + quote(datatype(t.dtype())) + ",\"shape\":"
                + Arrays.toString(t.shape()).replace(" ", "") + "}";
    }

    /** {@return the model's one input, as declared to the runtime} */
    private static TensorSpec input(PythonModel model) {
        return model.inputs().getFirst();
    }

    /** {@return the model's one output, as declared to the runtime} */
    private static TensorSpec output(PythonModel model) {
        return model.outputs().getFirst();
    }

    /** {@return the v2 datatype of {@code dtype}: the models' FP32 (and the others of one element a byte or more)} */
    static String datatype(DataType dtype) {
        for (Map.Entry<String, DataType> e : V2_DTYPES.entrySet()) {
            if (e.getValue().equals(dtype)) {
                return e.getKey();
            }
        }
        throw new IllegalArgumentException("no v2 datatype for " + dtype);
    }

    private void infer(ServerRequest req, ServerResponse res) {
        String name = req.path().pathParameters().get("name");
        PythonModel model = models.get(name);
        if (model == null) {
            error(res, new ProtocolException(404, "unknown model '" + name + "'"));
            return;
        }
        if (draining) {
            error(res, new ProtocolException(503, "the service is shutting down"));
            return;
        }
        inFlight.incrementAndGet();
        try {
            Tensor output;
            InferRequest request;
            boolean binary;
            // Announced before the body is read: a batch being gathered waits for this request
            // (within the window) rather than run without it; done with once the model answered.
            try (PythonModel.Announcement coming = model.announce()) {
                byte[] body = readBody(req);
                if (body == null) {
                    return;   // the client went away while sending: nothing was made for it
                }
                request = InferRequest.parse(body, body.length, headerLength(req));
                InferRequest.Input in = checkInput(model, request);
                binary = outputAsBinary(model, request);
                try (Tensor input = inputTensor(input(model), in)) {
                    output = predict(model, input);
                }
            }
            try (output) {
                respond(res, model, request, output, binary);
            }
        } catch (ProtocolException e) {
            if (e.status() == 400) {
                badRequests.incrementAndGet();
            }
            error(res, e);
        } catch (UncheckedIOException e) {
            clientsGone.incrementAndGet();   // the answer could not be written: the client is gone
            LOG.log(Level.FINE, "a client went away", e);
        } finally {
            if (inFlight.decrementAndGet() == 0 && draining) {
                synchronized (idle) {
                    idle.notifyAll();
                }
            }
        }
    }

    /** {@return the request's input in a new native tensor: one copy, of the binary data or the JSON's floats} */
    private static Tensor inputTensor(TensorSpec spec, InferRequest.Input in) {
        if (in.values() != null) {
            return Tensor.of(in.values(), in.shape());
        }
        Tensor t = Tensor.zeros(spec.dtype(), in.shape());
        t.withData(dst -> {
            MemorySegment.copy(in.body(), in.offset(), dst, ValueLayout.JAVA_BYTE, 0, (int) in.binaryDataSize());
            return null;
        });
        return t;
    }

    /**
     * {@return the model's output for {@code input}, owned by the caller}
     *
     * @throws ProtocolException 500 if the model raised or failed, 503 if its queue is full or the
     *                           wait was interrupted
     */
    private static Tensor predict(PythonModel model, Tensor input) {
        try {
            return model.predict(input);
        } catch (PythonException e) {
            throw new ProtocolException(500, "the model raised " + e.pythonType() + ": " + e.pythonMessage());
        } catch (ModelOverloadedException e) {
            throw new ProtocolException(503, e.getMessage());
        } catch (CancellationException e) {
            throw new ProtocolException(503, "interrupted");
        } catch (RuntimeException e) {
            throw new ProtocolException(500, "the model failed: " + e.getMessage());
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
    private static InferRequest.Input checkInput(PythonModel model, InferRequest request) {
        TensorSpec want = input(model);
        String wantDatatype = datatype(want.dtype());
        InferRequest.Input found = null;
        for (InferRequest.Input in : request.inputs()) {
            if (!in.name().equals(want.name())) {
                throw badRequest("model " + model.name() + " has no input '" + in.name() + "' (its input is "
                        + want.name() + ")");
            }
            if (found != null) {
                throw badRequest("input " + in.name() + " is given twice");
            }
            found = in;
        }
        if (found == null) {
            throw badRequest("model " + model.name() + " needs input " + want.name());
        }
        Integer size = InferRequest.DATATYPES.get(found.datatype());
        if (size == null) {
            throw badRequest("unknown datatype '" + found.datatype() + "'");
        }
        if (!found.datatype().equals(wantDatatype)) {
            throw badRequest("input " + found.name() + " has datatype " + found.datatype() + "; model " + model.name()
                    + " takes " + wantDatatype);
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
            throw badRequest("input " + found.name() + " has shape " + Arrays.toString(shape) + "; model " + model.name()
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
    private static boolean outputAsBinary(PythonModel model, InferRequest request) {
        boolean binary = request.binaryDataOutput();
        if (request.outputs() != null) {
            for (InferRequest.Output o : request.outputs()) {
                if (!o.name().equals(output(model).name())) {
                    throw badRequest("model " + model.name() + " has no output '" + o.name() + "' (its output is "
                            + output(model).name() + ")");
                }
                if (o.binaryData() != null) {
                    binary = o.binaryData();
                }
            }
        }
        return binary;
    }

    /** Writes the answer from the model's output: its bytes straight into a binary body, or its values as JSON. */
    private static void respond(ServerResponse res, PythonModel model, InferRequest request, Tensor output,
                                boolean binary) {
        long[] shape = output.shape();
        int values = (int) output.numel();
        StringBuilder json = new StringBuilder(binary ? 160 : 160 + values * 12);
        json.append("{\"model_name\":").append(quote(model.name())).append(",\"model_version\":\"1\"");
        if (request.id() != null) {
            json.append(",\"id\":").append(quote(request.id()));
        }
        json.append(",\"outputs\":[{\"name\":").append(quote(output(model).name())).append(",\"datatype\":")
                .append(quote(datatype(output.dtype()))).append(",\"shape\":[");
        for (int i = 0; i < shape.length; i++) {
            json.append(i == 0 ? "" : ",").append(shape[i]);
        }
        json.append(']');
        if (binary) {
            int size = (int) (values * (long) Float.BYTES);
            json.append(",\"parameters\":{\"binary_data_size\":").append(size).append("}}]}");
            byte[] header = json.toString().getBytes(StandardCharsets.UTF_8);
            byte[] body = Arrays.copyOf(header, header.length + size);
            // the output's bytes (little-endian on this CPU, as v2 wants) copied once, from the model's memory
            output.withData(src -> {
                MemorySegment.copy(src, ValueLayout.JAVA_BYTE, 0, body, header.length, size);
                return null;
            });
            res.header(INFERENCE_HEADER_CONTENT_LENGTH, Integer.toString(header.length));
            res.header(HeaderValues.CONTENT_TYPE_OCTET_STREAM);
            res.send(body);
        } else {
            float[] floats = output.toFloatArray();
            json.append(",\"data\":[");
            for (int i = 0; i < floats.length; i++) {
                if (i > 0) {
                    json.append(',');
                }
                appendFloat(json, floats[i]);
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

    /**
     * The admin endpoint: dlpack4j's live exports and native bytes, the requests in flight, the
     * models' counters summed (each model's {@link PythonModel#stats()}), the service's own, and per
     * model its counters with the percentiles of its queue waits and model calls.
     */
    private void stats(ServerRequest req, ServerResponse res) {
        long requests = 0;
        long answered = 0;
        long failed = 0;
        long rejected = 0;
        long batches = 0;
        int largestBatchRows = 0;
        StringBuilder perModel = new StringBuilder();
        for (PythonModel m : models.values()) {
            ModelStats s = m.stats();
            requests += s.requests();
            answered += s.answered();
            failed += s.failed();
            rejected += s.rejected();
            batches += s.batches();
            largestBatchRows = Math.max(largestBatchRows, s.largestBatchRows());
            perModel.append(perModel.isEmpty() ? "" : ",").append(quote(m.name())).append(":{\"requests\":")
                    .append(s.requests()).append(",\"answered\":").append(s.answered()).append(",\"failed\":")
                    .append(s.failed()).append(",\"rejected\":").append(s.rejected()).append(",\"batches\":")
                    .append(s.batches()).append(",\"largest_batch_rows\":").append(s.largestBatchRows())
                    .append(",\"queue_wait_p50_us\":").append(micros(s.queueWaitP50()))
                    .append(",\"queue_wait_p99_us\":").append(micros(s.queueWaitP99()))
                    .append(",\"run_p50_us\":").append(micros(s.runP50()))
                    .append(",\"run_p99_us\":").append(micros(s.runP99())).append('}');
        }
        json(res, 200, "{\"live_exports\":" + Dlpack.liveExports() + ",\"native_bytes\":" + Dlpack.nativeBytesInUse()
                + ",\"in_flight\":" + inFlight.get() + ",\"requests\":" + requests + ",\"answered\":" + answered
                + ",\"batches\":" + batches + ",\"largest_batch_rows\":" + largestBatchRows
                + ",\"model_errors\":" + failed + ",\"rejected\":" + rejected
                + ",\"bad_requests\":" + badRequests.get() + ",\"clients_gone\":" + clientsGone.get()
                + ",\"rss_bytes\":" + rssBytes() + ",\"models\":{" + perModel + "},\"settings\":"
                + quote(options.describe()) + "}");
    }

    private static long micros(Duration d) {
        return d.toNanos() / 1000;
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
