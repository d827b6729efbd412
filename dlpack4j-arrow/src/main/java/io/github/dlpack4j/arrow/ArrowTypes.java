package io.github.dlpack4j.arrow;

import static java.util.Map.entry;

import io.github.dlpack4j.DataType;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;

/**
 * The Arrow value types that are DLPack dtypes: fixed-width integers and floats of one byte or
 * more, which Arrow stores little-endian and packed like a C array. Everything else is refused with
 * what to use instead.
 */
final class ArrowTypes {
    private static final Map<ArrowType, DataType> DTYPES = Map.ofEntries(
            entry(new ArrowType.Int(8, true), DataType.INT8),
            entry(new ArrowType.Int(16, true), DataType.INT16),
            entry(new ArrowType.Int(32, true), DataType.INT32),
            entry(new ArrowType.Int(64, true), DataType.INT64),
            entry(new ArrowType.Int(8, false), DataType.UINT8),
            entry(new ArrowType.Int(16, false), DataType.UINT16),
            entry(new ArrowType.Int(32, false), DataType.UINT32),
            entry(new ArrowType.Int(64, false), DataType.UINT64),
            entry(new ArrowType.FloatingPoint(FloatingPointPrecision.HALF), DataType.FLOAT16),
            entry(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE), DataType.FLOAT32),
            entry(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE), DataType.FLOAT64));
    private static final Map<DataType, ArrowType> ARROW_TYPES = DTYPES.entrySet().stream()
            .collect(Collectors.toUnmodifiableMap(Map.Entry::getValue, Map.Entry::getKey));
    private static final String SUPPORTED = "TinyIntVector, SmallIntVector, IntVector, BigIntVector, UInt1Vector, "
            + "UInt2Vector, UInt4Vector, UInt8Vector, Float2Vector, Float4Vector, Float8Vector, and FixedSizeListVectors "
            + "of them";

    private ArrowTypes() {}

    /**
     * The dtype of the values of {@code leaf}, whose Arrow type is {@code type}.
     *
     * @throws IllegalArgumentException for a type without a DLPack dtype, saying what to use instead
     */
    static DataType dtypeOf(ArrowType type, FieldVector leaf) {
        DataType d = DTYPES.get(type);
        if (d != null) {
            return d;
        }
        String why = switch (type) {
            case ArrowType.Bool b -> "a BitVector packs eight booleans into a byte, and DLPack's bool takes a byte "
                    + "each; copy the values into a UInt1Vector (0 or 1) and take that";
            case ArrowType.Utf8 s -> variableWidth();
            case ArrowType.LargeUtf8 s -> variableWidth();
            case ArrowType.Utf8View s -> variableWidth();
            case ArrowType.Binary s -> variableWidth();
            case ArrowType.LargeBinary s -> variableWidth();
            case ArrowType.BinaryView s -> variableWidth();
            case ArrowType.List s -> variableWidth();
            case ArrowType.LargeList s -> variableWidth();
            case ArrowType.ListView s -> variableWidth();
            case ArrowType.LargeListView s -> variableWidth();
            default -> "Arrow type " + type + " has no DLPack dtype";
        };
        throw new IllegalArgumentException(leaf.getClass().getSimpleName() + " '" + leaf.getName()
                + "' cannot be a tensor: " + why + " (supported: " + SUPPORTED + ")");
    }

    private static String variableWidth() {
        return "its values have no fixed size for a tensor to stride over; lists of one length go in a "
                + "FixedSizeListVector";
    }

    /**
     * The Arrow type of {@code dtype}'s values.
     *
     * @throws IllegalArgumentException for a dtype Arrow has no fixed-width type for
     */
    static ArrowType arrowTypeOf(DataType dtype) {
        ArrowType t = ARROW_TYPES.get(dtype);
        if (t != null) {
            return t;
        }
        throw new IllegalArgumentException("no Arrow vector holds " + dtype + (dtype.equals(DataType.BOOL)
                ? ": Arrow's booleans are bits; copy the tensor into a UINT8 one first"
                : ": Arrow has fixed-width vectors for 8- to 64-bit integers and float16/32/64 only"));
    }
}
