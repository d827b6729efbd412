package io.github.dlpack4j.onnxruntime;

import ai.onnxruntime.OnnxJavaType;
import ai.onnxruntime.TensorInfo.OnnxTensorType;
import io.github.dlpack4j.DataType;
import java.util.List;
import java.util.Map;

/**
 * The element types both DLPack and ORT Java 1.26 have, and their names on each side. ORT's Java
 * API makes tensors over a direct buffer only for the {@link OnnxJavaType}s listed here (no uint16,
 * uint32, uint64, complex, FP8 or sub-byte types), so these are the types that cross in both
 * directions without a copy.
 */
final class OrtTypes {
    /** DLPack type, ORT Java type, ORT element type; in the order doctor lists them. */
    private record Row(DataType dlpack, OnnxJavaType java, OnnxTensorType onnx) {}

    private static final List<Row> ROWS = List.of(
            new Row(DataType.FLOAT32, OnnxJavaType.FLOAT, OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT),
            new Row(DataType.FLOAT64, OnnxJavaType.DOUBLE, OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE),
            new Row(DataType.FLOAT16, OnnxJavaType.FLOAT16, OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16),
            new Row(DataType.BFLOAT16, OnnxJavaType.BFLOAT16, OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16),
            new Row(DataType.INT8, OnnxJavaType.INT8, OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8),
            new Row(DataType.INT16, OnnxJavaType.INT16, OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16),
            new Row(DataType.INT32, OnnxJavaType.INT32, OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32),
            new Row(DataType.INT64, OnnxJavaType.INT64, OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64),
            new Row(DataType.UINT8, OnnxJavaType.UINT8, OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8),
            new Row(DataType.BOOL, OnnxJavaType.BOOL, OnnxTensorType.ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL));

    static final List<DataType> SUPPORTED = ROWS.stream().map(Row::dlpack).toList();
    private static final Map<DataType, OnnxJavaType> TO_JAVA = Map.ofEntries(
            ROWS.stream().map(r -> Map.entry(r.dlpack(), r.java())).toArray(Map.Entry[]::new));
    private static final Map<OnnxTensorType, DataType> FROM_ONNX = Map.ofEntries(
            ROWS.stream().map(r -> Map.entry(r.onnx(), r.dlpack())).toArray(Map.Entry[]::new));

    private OrtTypes() {}

    /** {@return ORT Java's type for {@code dtype}, or null if ORT Java cannot take it from a buffer} */
    static OnnxJavaType toOrt(DataType dtype) {
        return TO_JAVA.get(dtype);
    }

    /** {@return the DLPack type of ORT's element type, or null if DLPack or ORT Java has none} */
    static DataType fromOrt(OnnxTensorType type) {
        return FROM_ONNX.get(type);
    }

    /** {@return the list of supported types, for messages} */
    static String names() {
        return SUPPORTED.toString();
    }
}
