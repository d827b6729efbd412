package example.serve.protocol;

import static example.serve.protocol.ProtocolException.badRequest;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.model.ModelOverloadedException;
import io.github.dlpack4j.model.ModelStats;
import io.github.dlpack4j.model.ModelTimeoutException;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.TensorSpec;
import io.github.dlpack4j.python.PythonException;
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
import java.util.concurrent.CancellationException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The Open Inference Protocol (KServe v2) endpoints without a web framework: health, server and
 * model metadata, inference with JSON tensors and the binary tensor data extension, and
 * {@code GET /admin/stats}. A web framework's handler hands over what it read from the request (the
 * model's name, the body's stream and declared length, the {@code Inference-Header-Content-Length}
 * header) and sends the {@link Answer} it gets back; the checks, the model call and every answer's
 * bytes, error bodies included, are made here, so that each service built on it answers alike.
 */
public final class InferenceProtocol {
    /** The header of the binary tensor data extension: the length of the JSON before the binary data. */
    public static final String INFERENCE_HEADER_CONTENT_LENGTH = "Inference-Header-Content-Length";
    /** The content type of JSON answers. */
    public static final String JSON = "application/json";
    /** The content type of answers with binary data. */
    public static final String OCTET_STREAM = "application/octet-stream";

    private static final Logger LOG = Logger.getLogger(InferenceProtocol.class.getName());
    /** The v2 datatypes of the dtypes a model may declare (those of one element a byte or more). */
    private static final Map<String, DataType> V2_DTYPES = Map.ofEntries(Map.entry("BOOL", DataType.BOOL),
            Map.entry("UINT8", DataType.UINT8), Map.entry("UINT16", DataType.UINT16),
            Map.entry("UINT32", DataType.UINT32), Map.entry("UINT64", DataType.UINT64), Map.entry("INT8", DataType.INT8),
            Map.entry("INT16", DataType.INT16), Map.entry("INT32", DataType.INT32), Map.entry("INT64", DataType.INT64),
            Map.entry("FP16", DataType.FLOAT16), Map.entry("FP32", DataType.FLOAT32),
            Map.entry("FP64", DataType.FLOAT64), Map.entry("BF16", DataType.BFLOAT16));
    private static final Answer OK = new Answer(200, null, new byte[0], -1);
    private static final Answer UNAVAILABLE = new Answer(503, null, new byte[0], -1);

    private final Map<String, PythonModel> models;
    private final long maxBodyBytes;
    private final String settings;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicLong badRequests = new AtomicLong();
    private final AtomicLong clientsGone = new AtomicLong();
    private final Object idle = new Object();
    private volatile boolean draining;

    /**
     * An answer to send.
     *
     * @param status     the HTTP status
     * @param contentType the {@code Content-Type}; null for an answer without a body
     * @param body       the body's bytes (empty for none)
     * @param jsonLength the {@code Inference-Header-Content-Length} of an answer with binary data;
     *                   -1 for the others, which have no such header
     */
    public record Answer(int status, String contentType, byte[] body, int jsonLength) {
        static Answer json(int status, String json) {
            return new Answer(status, JSON, json.getBytes(StandardCharsets.UTF_8), -1);
        }
    }

    /** Sends an inference request's answer the web framework's way. */
    @FunctionalInterface
    public interface Responder {
        /**
         * Sends {@code answer}.
         *
         * @param answer the answer
         * @throws UncheckedIOException if it could not be written: the client went away
         */
        void send(Answer answer);
    }

    /**
     * @param models       the models served, by name, in the order the stats list them
     * @param maxBodyBytes the largest request body accepted
     * @param settings     the service's settings, for {@code GET /admin/stats}
     */
    public InferenceProtocol(Map<String, PythonModel> models, long maxBodyBytes, String settings) {
        this.models = models;
        this.maxBodyBytes = maxBodyBytes;
        this.settings = settings;
    }

    /** {@return the answer of {@code GET /v2/health/live}: 200} */
    public Answer live() {
        return OK;
    }

    /** {@return the answer of {@code GET /v2/health/ready}: 200, 503 once draining} */
    public Answer ready() {
        return draining ? UNAVAILABLE : OK;
    }

    /** {@return the answer of {@code GET /v2}: the server's metadata} */
    public Answer serverMetadata() {
        return Answer.json(200, "{\"name\":\"serve-torch\",\"version\":\"1.0\",\"extensions\":[\"binary_tensor_data\"]}");
    }

    /** {@return the answer of {@code GET /v2/models/{name}/ready}: 200, 503 once draining, 404 for a model not served over v2} */
    public Answer modelReady(String name) {
        ProtocolException notServed = notServed(name);
        return notServed != null ? error(notServed) : ready();
    }

    /** {@return the answer of {@code GET /v2/models/{name}}: the model's metadata, or 404} */
    public Answer modelMetadata(String name) {
        ProtocolException notServed = notServed(name);
        if (notServed != null) {
            return error(notServed);
        }
        PythonModel model = models.get(name);
        return Answer.json(200, "{\"name\":" + quote(name) + ",\"versions\":[\"1\"],\"platform\":\"pytorch_torch\","
                + "\"inputs\":[" + tensorMetadata(input(model)) + "],\"outputs\":[" + tensorMetadata(output(model))
                + "]}");
    }

    /**
     * {@return why model {@code name} is not served over v2 (404), or null if it is}: a model with
     * text inputs (minilm, answered at {@code POST /v1/embeddings}) has no tensor to take
     */
    private ProtocolException notServed(String name) {
        PythonModel model = models.get(name);
        if (model == null) {
            return new ProtocolException(404, "unknown model '" + name + "'");
        }
        if (model.inputs().isEmpty()) {
            return new ProtocolException(404, "model '" + name + "' takes text, not tensors: it is not served over v2");
        }
        return null;
    }

    /** {@return the answer to a request no endpoint takes: 404 with an error body} */
    public Answer noEndpoint(String method, String path) {
        return error(new ProtocolException(404, "no endpoint " + method + " " + path));
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
    public static String datatype(DataType dtype) {
        for (Map.Entry<String, DataType> e : V2_DTYPES.entrySet()) {
            if (e.getValue().equals(dtype)) {
                return e.getKey();
            }
        }
        throw new IllegalArgumentException("no v2 datatype for " + dtype);
    }

    /**
     * Answers {@code POST /v2/models/{name}/infer}: reads and checks the request, calls the model
     * with the input in a native tensor, and sends the answer from the output tensor, or an error
     * body; sends nothing when the client went away before its body was in.
     *
     * @param name          the model's name, from the path
     * @param contentLength the body's declared length, or -1 when the request does not declare it
     * @param body          the body
     * @param headerLength  the {@code Inference-Header-Content-Length} header's value, or null
     * @param responder     sends the answer; it counts as in flight until this returns
     */
    public void infer(String name, long contentLength, InputStream body, String headerLength, Responder responder) {
        ProtocolException notServed = notServed(name);
        if (notServed != null) {
            error(responder, notServed);
            return;
        }
        PythonModel model = models.get(name);
        if (draining) {
            error(responder, new ProtocolException(503, "the service is shutting down"));
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
                byte[] bytes = readBody(contentLength, body);
                if (bytes == null) {
                    return;   // the client went away while sending: nothing was made for it
                }
                request = InferRequest.parse(bytes, bytes.length, headerLength(headerLength));
                InferRequest.Input in = checkInput(model, request);
                binary = outputAsBinary(model, request);
                try (Tensor input = inputTensor(input(model), in)) {
                    output = predict(model, input);
                }
            }
            Answer answer;
            try (output) {
                answer = answer(model, request, output, binary);
            }
            responder.send(answer);
        } catch (ProtocolException e) {
            if (e.status() == 400) {
                badRequests.incrementAndGet();
            }
            error(responder, e);
        } catch (UncheckedIOException e) {
            clientsGone.incrementAndGet();   // the answer could not be written: the client is gone
            LOG.log(Level.FINE, "a client went away", e);
        } finally {
            leave();
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
     *                           wait was interrupted, 504 if its deadline ({@code --timeout-ms}) passed
     */
    private static Tensor predict(PythonModel model, Tensor input) {
        try {
            return model.predict(input);
        } catch (PythonException e) {
            throw new ProtocolException(500, "the model raised " + e.pythonType() + ": " + e.pythonMessage());
        } catch (ModelOverloadedException e) {
            throw new ProtocolException(503, e.getMessage());
        } catch (ModelTimeoutException e) {
            throw new ProtocolException(504, e.getMessage());
        } catch (CancellationException e) {
            throw new ProtocolException(503, "interrupted");
        } catch (RuntimeException e) {
            throw new ProtocolException(500, "the model failed: " + e.getMessage());
        }
    }

    /**
     * {@return the whole body, or null if the client closed the connection before sending it all
     * (counted as a client gone)}: for this service's other endpoints too
     *
     * @param declared the body's declared length, or -1 when the request does not declare it
     * @param in       the body
     * @throws ProtocolException (400) if the body is over the limit ({@code --max-body-mb})
     */
    public byte[] readBody(long declared, InputStream in) {
        long max = maxBodyBytes;
        if (declared > max) {
            throw badRequest("the body has " + declared + " bytes, more than the limit of " + max);
        }
        try (in) {
            if (declared >= 0) {
                int n = (int) declared;
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

    private static long headerLength(String v) {
        if (v == null) {
            return -1;
        }
        try {
            long n = Long.parseLong(v.trim());
            if (n < 0) {
                throw badRequest(INFERENCE_HEADER_CONTENT_LENGTH + " " + v + " is negative");
            }
            return n;
        } catch (NumberFormatException e) {
            throw badRequest(INFERENCE_HEADER_CONTENT_LENGTH + " '" + v + "' is not a number");
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

    /** {@return the answer from the model's output: its bytes straight into a binary body, or its values as JSON} */
    private static Answer answer(PythonModel model, InferRequest request, Tensor output, boolean binary) {
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
            return new Answer(200, OCTET_STREAM, body, header.length);
        }
        float[] floats = output.toFloatArray();
        json.append(",\"data\":[");
        for (int i = 0; i < floats.length; i++) {
            if (i > 0) {
                json.append(',');
            }
            appendFloat(json, floats[i]);
        }
        json.append("]}]}");
        return Answer.json(200, json.toString());
    }

    /** A float as JSON: the shortest decimal that reads back as the same float; NaN and infinities as Python's json writes them. */
    static void appendFloat(StringBuilder json, float v) {
        if (Float.isNaN(v)) {
            json.append("NaN");
        } else if (Float.isInfinite(v)) {
            json.append(v > 0 ? "Infinity" : "-Infinity");
        } else {
            json.append(v);
        }
    }

    /**
     * {@return the answer of the admin endpoint {@code GET /admin/stats}}: dlpack4j's live exports
     * and native bytes, the requests in flight, the models' counters summed (each model's
     * {@link PythonModel#stats()}), the service's own, and per model its counters with the
     * percentiles of its queue waits and model calls.
     */
    public Answer stats() {
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
        return Answer.json(200, "{\"live_exports\":" + Dlpack.liveExports() + ",\"native_bytes\":"
                + Dlpack.nativeBytesInUse() + ",\"in_flight\":" + inFlight.get() + ",\"requests\":" + requests
                + ",\"answered\":" + answered + ",\"batches\":" + batches + ",\"largest_batch_rows\":" + largestBatchRows
                + ",\"model_errors\":" + failed + ",\"rejected\":" + rejected
                + ",\"bad_requests\":" + badRequests.get() + ",\"clients_gone\":" + clientsGone.get()
                + ",\"rss_bytes\":" + rssBytes() + ",\"models\":{" + perModel + "},\"settings\":"
                + quote(settings) + "}");
    }

    /** {@return one line per model of what it did ({@link PythonModel#stats()}), as a service prints them when it stops} */
    public String statsLines() {
        StringBuilder b = new StringBuilder();
        for (PythonModel m : models.values()) {
            ModelStats s = m.stats();
            b.append(b.isEmpty() ? "" : "\n").append("serve-torch: ").append(m.name()).append(": ")
                    .append(s.requests()).append(" requests, ").append(s.answered()).append(" answered, ")
                    .append(s.failed()).append(" failed, ").append(s.rejected()).append(" rejected; ")
                    .append(s.batches()).append(" model calls of up to ").append(s.largestBatchRows())
                    .append(" rows; queue wait p50 ").append(micros(s.queueWaitP50())).append(" us, p99 ")
                    .append(micros(s.queueWaitP99())).append(" us; model call p50 ").append(micros(s.runP50()))
                    .append(" us, p99 ").append(micros(s.runP99())).append(" us");
        }
        return b.toString();
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

    /** {@return {@code e} as an answer: its status and a v2 error body} */
    private static Answer error(ProtocolException e) {
        return Answer.json(e.status(), "{\"error\":" + quote(e.getMessage()) + "}");
    }

    private static void error(Responder responder, ProtocolException e) {
        try {
            responder.send(error(e));
        } catch (UncheckedIOException gone) {
            LOG.log(Level.FINE, "a client went away before its error", gone);
        }
    }

    /** {@return {@code s} as a JSON string}: the library's escaper, {@link io.github.dlpack4j.model.Transformers#jsonString} */
    public static String quote(String s) {
        return io.github.dlpack4j.model.Transformers.jsonString(s);
    }

    /**
     * Runs a request of another endpoint of this service (the OpenAI-style {@code /v1/embeddings}) as
     * an inference request: counted in flight while it runs, so that draining waits for it.
     *
     * @param request the request's work: it reads the body, calls the model and sends the answer
     * @return false, without running it, once the service is draining (answer it 503)
     */
    public boolean serve(Runnable request) {
        if (draining) {
            return false;
        }
        inFlight.incrementAndGet();
        try {
            request.run();
        } finally {
            leave();
        }
        return true;
    }

    /** A request in flight is done with: the last one wakes a drain waiting for it. */
    private void leave() {
        if (inFlight.decrementAndGet() == 0 && draining) {
            synchronized (idle) {
                idle.notifyAll();
            }
        }
    }

    /** Counts a bad request (a 400) of another endpoint of this service, for {@code /admin/stats}. */
    public void countBadRequest() {
        badRequests.incrementAndGet();
    }

    /** Counts a client of another endpoint of this service that went away before its answer, for {@code /admin/stats}. */
    public void countClientGone() {
        clientsGone.incrementAndGet();
    }

    /** Stops taking inference requests (503 from now on, and from the ready endpoints). */
    public void startDraining() {
        draining = true;
    }

    /**
     * Waits until no inference request is in flight, at most {@code millis}.
     *
     * @param millis the longest wait
     * @return whether none is left
     * @throws InterruptedException if the wait is interrupted
     */
    public boolean awaitIdle(long millis) throws InterruptedException {
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
    public int inFlight() {
        return inFlight.get();
    }
}
