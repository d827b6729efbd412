package io.github.dlpack4j.arrow;

import io.github.dlpack4j.DataType;
import java.util.EnumMap;
import java.util.Map;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.types.Types.MinorType;
import org.apache.arrow.vector.types.pojo.ArrowType;

/**
 * The Arrow vector types that are DLPack dtypes: fixed-width integers and floats of one byte or
 * more, which Arrow stores little-endian and packed like a C array. Everything else is refused with
 * what to use instead.
 */
final class ArrowTypes {
    private static final Map<DataType, MinorType> MINOR_TYPES = Map.ofEntries(
            Map.entry(DataType.INT8, MinorType.TINYINT), Map.entry(DataType.INT16, MinorType.SMALLINT),
            Map.entry(DataType.INT32, MinorType.INT), Map.entry(DataType.INT64, MinorType.BIGINT),
            Map.entry(DataType.UINT8, MinorType.UINT1), Map.entry(DataType.UINT16, MinorType.UINT2),
            Map.entry(DataType.UINT32, MinorType.UINT4), Map.entry(DataType.UINT64, MinorType.UINT8),
            Map.entry(DataType.FLOAT16, MinorType.FLOAT2), Map.entry(DataType.FLOAT32, MinorType.FLOAT4),
            Map.entry(DataType.FLOAT64, MinorType.FLOAT8));
    /** {@link #MINOR_TYPES} the other way round, for {@link #dtypeOf}. */
    private static final Map<MinorType, DataType> DTYPES = inverse(MINOR_TYPES);
    private static final String SUPPORTED = "TinyIntVector, SmallIntVector, IntVector, BigIntVector, UInt1Vector, "
            + "UInt2Vector, UInt4Vector, UInt8Vector, Float2Vector, Float4Vector, Float8Vector, and FixedSizeListVectors "
            + "of them";

    private ArrowTypes() {}

    private static Map<MinorType, DataType> inverse(Map<DataType, MinorType> map) {
        Map<MinorType, DataType> inverse = new EnumMap<>(MinorType.class);
        map.forEach((dtype, minor) -> inverse.put(minor, dtype));
        return inverse;
    }

    /**
     * The dtype of {@code leaf}'s values, looked up in an {@code EnumMap} (this runs on every
     * {@code of}); the switch only words the refusals.
     *
     * @throws IllegalArgumentException for a vector without a DLPack dtype, saying what to use instead
     */
    static DataType dtypeOf(FieldVector leaf) {
        MinorType kind = leaf.getMinorType();
        DataType dtype = DTYPES.get(kind);
        if (dtype != null) {
            return dtype;
        }
        throw switch (kind) {
            case BIT -> refused(leaf, "a BitVector packs eight booleans into a byte, and DLPack's bool takes a "
                    + "byte each; copy the values into a UInt1Vector (0 or 1) and take that");
            case VARCHAR, LARGEVARCHAR, VIEWVARCHAR, VARBINARY, LARGEVARBINARY, VIEWVARBINARY, LIST, LARGELIST,
                 LISTVIEW, LARGELISTVIEW -> refused(leaf, "its values have no fixed size for a tensor to stride "
                    + "over; lists of one length go in a FixedSizeListVector");
            default -> refused(leaf, "Arrow type " + leaf.getField().getType() + " has no DLPack dtype");
        };
    }

    private static IllegalArgumentException refused(FieldVector leaf, String why) {
        return new IllegalArgumentException(leaf.getClass().getSimpleName() + " '" + leaf.getName()
                + "' cannot be a tensor: " + why + " (supported: " + SUPPORTED + ")");
    }

    /**
     * The Arrow type of {@code dtype}'s values.
     *
     * @throws IllegalArgumentException for a dtype Arrow has no fixed-width type for
     */
    static ArrowType arrowTypeOf(DataType dtype) {
        MinorType t = MINOR_TYPES.get(dtype);
        if (t != null) {
            return t.getType();
        }
        throw new IllegalArgumentException("no Arrow vector holds " + dtype + (dtype.equals(DataType.BOOL)
                ? ": Arrow's booleans are bits; copy the tensor into a UINT8 one first"
                : ": Arrow has fixed-width vectors for 8- to 64-bit integers and float16/32/64 only"));
    }
}
