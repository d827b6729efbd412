package io.github.dlpack4j.onnxruntime;

import ai.onnxruntime.NodeInfo;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OnnxValue;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.github.dlpack4j.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.StringJoiner;

/**
 * Runs an ONNX Runtime {@link OrtSession} on dlpack4j {@link Tensor}s: each input is given to ORT
 * without a copy, the outputs come back as tensors over ORT's own memory ({@link #run(Map)}) or are
 * written by ORT into tensors the caller gives ({@link #run(Map, Map)}, ORT's pinned outputs).
 *
 * <p>Inputs may come from anywhere dlpack4j tensors come from: a {@code ManagedTensor} imported from
 * torch or numpy, an Arrow column, {@link Tensor#of(float[], long...)}, a view with a byte offset.
 * They must be compact, on the CPU, of one of {@link OrtTensors#dataTypes()}, and at most
 * {@code Integer.MAX_VALUE - 8} bytes each; anything else is refused with an
 * {@link IllegalArgumentException} that names the input and the fix ({@code tensor.copy()} makes a
 * compact copy). What the model itself refuses (a shape or dtype it does not take) is ORT's
 * {@link OrtException}, its message kept after dlpack4j's account of the inputs and what the model
 * declares.
 *
 * <p>A {@code DlpackSession} does not own the session (close that yourself) and keeps no state of
 * its own: share one between threads as freely as the {@code OrtSession}.
 */
public final class DlpackSession {
    private final OrtSession session;

    private DlpackSession(OrtSession session) {
        this.session = session;
    }

    /**
     * A runner of {@code session} on tensors; it does not own the session.
     *
     * @param session an open ORT session
     * @return the runner
     */
    public static DlpackSession of(OrtSession session) {
        return new DlpackSession(Objects.requireNonNull(session, "session"));
    }

    /** {@return the ORT session this runs} */
    public OrtSession session() {
        return session;
    }

    /**
     * Runs the model on {@code inputs}, each given to ORT without a copy (the tensors may be closed
     * as soon as this returns), and returns every output of the model as an owning tensor over the
     * memory ORT allocated for it, without a copy ({@link OrtTensors#outputsAreZeroCopy()}). Each
     * output holds ORT's memory until it (and every share and DLPack export of it) is closed, in any
     * order, also after the session is closed.
     *
     * @param inputs a tensor for each input of the model, by name
     * @return the outputs by name, in the model's order; the caller closes each
     * @throws IllegalArgumentException if an input name is missing or unknown, or a tensor cannot be
     *                                  given to ORT in place (the message names it and the fix), or an
     *                                  output is of a type dlpack4j cannot view
     * @throws IllegalStateException    if an input tensor is closed
     * @throws OrtException             if ORT refuses the run (its message kept)
     */
    public Map<String, Tensor> run(Map<String, ? extends Tensor> inputs) throws OrtException {
        checkNames(inputs, session.getInputNames(), "input", true);
        List<SharedOnnxTensor> shared = new ArrayList<>(inputs.size());
        try {
            Map<String, OnnxTensor> in = share(inputs, "input", false, shared);
            OrtSession.Result result;
            try {
                result = session.run(in);
            } catch (OrtException e) {
                throw refused(e, inputs, Map.of());
            }
            return adoptAll(result);
        } finally {
            closeAll(shared);
        }
    }

    /**
     * Runs the model on {@code inputs} and has ORT write the named outputs into the given tensors
     * (ORT's pinned outputs), so that each result lands in memory that numpy or torch may already
     * view. Only the outputs named are computed. Each output tensor must be compact, writable, on
     * the CPU, and of the shape and type the model produces.
     *
     * @param inputs  a tensor for each input of the model, by name
     * @param outputs a tensor for each output wanted, by name (at least one)
     * @throws IllegalArgumentException if a name is missing or unknown, or a tensor cannot be given to
     *                                  ORT in place (read-only outputs included); the message says how
     * @throws IllegalStateException    if a tensor is closed
     * @throws OrtException             if ORT refuses the run, such as an output of another shape
     *                                  (its message kept)
     */
    public void run(Map<String, ? extends Tensor> inputs, Map<String, ? extends Tensor> outputs) throws OrtException {
        checkNames(inputs, session.getInputNames(), "input", true);
        if (outputs.isEmpty()) {
            throw new IllegalArgumentException("no outputs given: name at least one of the model's outputs "
                    + session.getOutputNames() + ", or call run(inputs) for all of them");
        }
        checkNames(outputs, session.getOutputNames(), "output", false);
        List<SharedOnnxTensor> shared = new ArrayList<>(inputs.size() + outputs.size());
        try {
            Map<String, OnnxTensor> in = share(inputs, "input", false, shared);
            Map<String, OnnxTensor> out = share(outputs, "output", true, shared);
            try (OrtSession.Result ignored = session.run(in, out)) {
                // The results are the pinned tensors themselves, which the Result does not own.
            } catch (OrtException e) {
                throw refused(e, inputs, outputs);
            }
        } finally {
            closeAll(shared);
        }
    }

    private static void checkNames(Map<String, ? extends Tensor> given, Set<String> names, String kind,
                                   boolean all) {
        for (Map.Entry<String, ? extends Tensor> e : given.entrySet()) {
            Objects.requireNonNull(e.getValue(), () -> kind + " '" + e.getKey() + "' is null");
            if (!names.contains(e.getKey())) {
                throw new IllegalArgumentException("unknown " + kind + " '" + e.getKey() + "': the model's " + kind
                        + "s are " + names + "; use those names as the keys");
            }
        }
        if (all && given.size() != names.size()) {
            List<String> missing = names.stream().filter(n -> !given.containsKey(n)).toList();
            throw new IllegalArgumentException("missing " + kind + (missing.size() == 1 ? " " : "s ") + missing
                    + ": the model takes " + names + "; give a tensor for each");
        }
    }

    private static Map<String, OnnxTensor> share(Map<String, ? extends Tensor> tensors, String kind, boolean writable,
                                                 List<SharedOnnxTensor> shared) throws OrtException {
        Map<String, OnnxTensor> onnx = new LinkedHashMap<>();
        for (Map.Entry<String, ? extends Tensor> e : tensors.entrySet()) {
            String what = kind + " '" + e.getKey() + "'";
            OrtInputs.check(e.getValue(), what, writable);
            SharedOnnxTensor s = SharedOnnxTensor.of(e.getValue(), what);
            shared.add(s);
            onnx.put(e.getKey(), s.onnxTensor());
        }
        return onnx;
    }

    private static void closeAll(List<SharedOnnxTensor> shared) {
        shared.forEach(SharedOnnxTensor::close);
    }

    /** Every value of {@code result} as a tensor; on a refusal, nothing is left open. */
    private static Map<String, Tensor> adoptAll(OrtSession.Result result) {
        Map<String, Tensor> out = new LinkedHashMap<>();
        List<OnnxValue> left = new ArrayList<>(result.size());
        List<String> names = new ArrayList<>(result.size());
        for (Map.Entry<String, OnnxValue> e : result) {
            names.add(e.getKey());
            left.add(e.getValue());
        }
        try {
            for (int i = 0; i < names.size(); i++) {
                String what = "output '" + names.get(i) + "'";
                if (!(left.get(i) instanceof OnnxTensor t)) {
                    throw new IllegalArgumentException(what + " is a " + left.get(i).getType() + ", not a tensor: "
                            + "run such models with OrtSession.run");
                }
                out.put(names.get(i), OrtOutputs.adopt(t, what));
                left.set(i, null);
            }
            return out;
        } catch (RuntimeException | Error e) {
            out.values().forEach(Tensor::close);
            left.stream().filter(Objects::nonNull).forEach(OnnxValue::close);
            throw e;
        }
    }

    /** ORT's refusal of a run, with the tensors given and what the model declares in front. */
    private OrtException refused(OrtException e, Map<String, ? extends Tensor> inputs,
                                 Map<String, ? extends Tensor> outputs) {
        StringBuilder context = new StringBuilder("ORT refused the run: given inputs ").append(describe(inputs));
        if (!outputs.isEmpty()) {
            context.append(" and outputs ").append(describe(outputs));
        }
        try {
            context.append("; the model declares inputs ").append(declared(session.getInputInfo()))
                    .append(" and outputs ").append(declared(session.getOutputInfo()));
        } catch (OrtException | RuntimeException notKnown) {
            // The account above is help, not the error: ORT's own message follows either way.
        }
        context.append(" (-1 or a name: any size). Give tensors of the declared types and shapes");
        return Refusals.withContext(e, context.toString());
    }

    private static String describe(Map<String, ? extends Tensor> tensors) {
        StringJoiner j = new StringJoiner(", ", "{", "}");
        tensors.forEach((name, t) -> j.add(name + ": " + t.dtype() + " " + Arrays.toString(t.shape())));
        return j.toString();
    }

    private static String declared(Map<String, NodeInfo> infos) {
        StringJoiner j = new StringJoiner(", ", "{", "}");
        infos.forEach((name, info) -> j.add(name + ": " + info.getInfo()));
        return j.toString();
    }
}
