package io.github.dlpack4j.djl;

import io.github.dlpack4j.DataType;
import java.util.List;

/**
 * DJL's element types and their DLPack twins. Only those that DJL 0.36's PyTorch engine can make
 * arrays of cross: it aborts the process ({@code std::terminate}) when asked for a bfloat16, int16,
 * uint16, uint32 or uint64 array ({@code create}, {@code zeros}, {@code toType} alike; tried in
 * fresh JVMs, see docs/djl.md), so those are refused before DJL is called. DJL's
 * {@code COMPLEX64} has no twin: the engine makes float32 arrays of it.
 */
final class DjlTypes {
    /** The DJL types that cross, in the order of {@link #DLPACK}. */
    static final List<ai.djl.ndarray.types.DataType> DJL = List.of(
            ai.djl.ndarray.types.DataType.FLOAT32, ai.djl.ndarray.types.DataType.FLOAT64,
            ai.djl.ndarray.types.DataType.FLOAT16, ai.djl.ndarray.types.DataType.INT8,
            ai.djl.ndarray.types.DataType.INT32, ai.djl.ndarray.types.DataType.INT64,
            ai.djl.ndarray.types.DataType.UINT8, ai.djl.ndarray.types.DataType.BOOLEAN);
    /** The DLPack types that cross, in the order of {@link #DJL}. */
    static final List<DataType> DLPACK = List.of(
            DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16, DataType.INT8,
            DataType.INT32, DataType.INT64, DataType.UINT8, DataType.BOOL);
    /** DLPack types whose DJL twins the engine aborts on. */
    private static final List<DataType> ABORTING = List.of(
            DataType.BFLOAT16, DataType.INT16, DataType.UINT16, DataType.UINT32, DataType.UINT64);

    private DjlTypes() {}

    static DataType toDlpack(ai.djl.ndarray.types.DataType djl) {
        int k = DJL.indexOf(djl);
        if (k < 0) {
            throw new IllegalArgumentException("DJL's " + djl + " does not cross to DLPack; "
                    + "convert the array first, e.g. toType(DataType.FLOAT32, false) (types that cross: " + DJL + ")");
        }
        return DLPACK.get(k);
    }

    static ai.djl.ndarray.types.DataType toDjl(DataType dlpack) {
        int k = DLPACK.indexOf(dlpack);
        if (k < 0) {
            String why = ABORTING.contains(dlpack)
                    ? "DJL 0.36's PyTorch engine aborts the process on " + dlpack + " arrays"
                    : "DJL has no " + dlpack + " type";
            throw new IllegalArgumentException("a " + dlpack + " tensor cannot become an NDArray: " + why
                    + "; convert it to one of " + DLPACK + " first");
        }
        return DJL.get(k);
    }
}
