package io.github.dlpack4j.cli;

import ai.onnxruntime.OnnxJavaType;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.cli.DoctorReport.DtypeRow;
import io.github.dlpack4j.cli.DoctorReport.OnnxRuntime;
import io.github.dlpack4j.cli.DoctorReport.Outcome;
import io.github.dlpack4j.onnxruntime.OrtTensors;
import io.github.dlpack4j.onnxruntime.SharedOnnxTensor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * ONNX Runtime Java for {@code doctor} and {@code bench}. The only class of the CLI that names ORT:
 * it is used only after {@link Doctor#ortPresent()} said yes, so the CLI runs without ORT.
 */
final class OrtProbe {
    /** ORT Java's types, by the DLPack dtype of the same name (what ORT could make a tensor of). */
    private static final Map<String, String> ORT_TYPES = Map.of("float32", "FLOAT", "float64", "DOUBLE",
            "float16", "FLOAT16", "bfloat16", "BFLOAT16", "int8", "INT8", "int16", "INT16", "int32", "INT32",
            "int64", "INT64", "uint8", "UINT8", "bool", "BOOL");

    private OrtProbe() {}

    /** ORT's version, and for each of {@code dtypes} whether it crosses each way, tried for real. */
    static OnnxRuntime examine(List<DataType> dtypes) {
        String version;
        try {
            version = OrtEnvironment.getEnvironment().getVersion();
        } catch (RuntimeException | LinkageError e) {
            return new OnnxRuntime("error", null, null, Main.oneLine(e), List.of());
        }
        List<DtypeRow> rows = new ArrayList<>();
        for (DataType t : dtypes) {
            rows.add(new DtypeRow(t.toString(), toJava(t), fromJava(t)));
        }
        return new OnnxRuntime("ok", version, OrtTensors.outputsAreZeroCopy(), null, rows);
    }

    /** An ORT tensor of three bytes' worth of elements of {@code dtype}, as a Java tensor. */
    private static Outcome toJava(DataType dtype) {
        String type = ORT_TYPES.get(dtype.toString());
        if (type == null) {
            return Outcome.notApplicable("ORT Java makes no tensors of " + dtype + " from memory");
        }
        ByteBuffer bytes = ByteBuffer.allocateDirect(3 * dtype.byteSize()).order(ByteOrder.nativeOrder());
        OnnxTensor onnx;
        try {
            onnx = OnnxTensor.createTensor(OrtEnvironment.getEnvironment(), bytes, new long[] {3},
                    OnnxJavaType.valueOf(type));
        } catch (OrtException | RuntimeException e) {
            return Outcome.no("ORT made no tensor: " + Main.oneLine(e));
        }
        Tensor t;
        try {
            t = OrtTensors.toTensor(onnx); // takes onnx over: closing t closes it
        } catch (RuntimeException e) {
            onnx.close();
            return Outcome.no(Main.oneLine(e));
        }
        try (t) {
            return t.dtype().equals(dtype) ? Outcome.yes("a tensor over ORT's memory") : Outcome.no("arrived as " + t.dtype());
        }
    }

    /** A Java tensor of {@code dtype} as an OnnxTensor over its memory. */
    private static Outcome fromJava(DataType dtype) {
        try (Tensor t = Tensor.zeros(dtype, 3); SharedOnnxTensor s = OrtTensors.toOnnxTensor(t)) {
            return s.onnxTensor().ownsBuffer() ? Outcome.no("ORT copied it") : Outcome.yes("an OnnxTensor over its memory");
        } catch (IllegalArgumentException e) {
            return Outcome.notApplicable(Main.oneLine(e));
        } catch (OrtException | RuntimeException e) {
            return Outcome.no(Main.oneLine(e));
        }
    }

    /** Gives {@code t} to ORT (an OnnxTensor over its memory) and closes it again: what bench times. */
    static void giveAndClose(Tensor t) {
        try (SharedOnnxTensor s = OrtTensors.toOnnxTensor(t)) {
            s.onnxTensor();
        } catch (OrtException e) {
            throw new IllegalStateException(e);
        }
    }
}
