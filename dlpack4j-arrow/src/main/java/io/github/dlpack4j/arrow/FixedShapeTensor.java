package io.github.dlpack4j.arrow;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.dlpack4j.internal.RowMajor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.stream.Collectors;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;

/**
 * The parameters of Arrow's canonical extension type {@code arrow.fixed_shape_tensor}: a
 * {@code FixedSizeList} column whose every row is one tensor of {@code shape}, stored row-major.
 * Arrow Java has no class for the type, so it is read from the field's extension metadata (kept on
 * the storage vector when the type is not registered) or from a registered {@code ExtensionType}'s
 * serialized form.
 *
 * <p>As the specification says: {@code shape} and {@code dimNames} describe the <em>physical</em>
 * (row-major) layout; the i-th dimension of the logical view is physical dimension
 * {@code permutation[i]}.
 *
 * @param shape       the physical shape of each row's tensor
 * @param permutation logical dimension i is physical dimension {@code permutation[i]}
 * @param dimNames    names of the physical dimensions, or null
 */
record FixedShapeTensor(long[] shape, int[] permutation, List<String> dimNames) {
    static final String NAME = "arrow.fixed_shape_tensor";
    private static final ObjectMapper JSON = new ObjectMapper();
    /**
     * Parsed metadata by its text: {@code of(Field)} runs on every {@code ArrowTensors.of} and
     * {@code dimNames}, and a column's metadata is the same each time. Metadata that does not parse
     * is not kept, so it is refused again on every call.
     */
    private static final ConcurrentMap<String, FixedShapeTensor> PARSED = new ConcurrentHashMap<>();

    /** The type's parameters if {@code field} is of it (registered or as storage with metadata), else null. */
    static FixedShapeTensor of(Field field) {
        String metadata;
        if (field.getType() instanceof ArrowType.ExtensionType ext) {
            metadata = NAME.equals(ext.extensionName()) ? ext.serialize() : null;
        } else {
            Map<String, String> m = field.getMetadata();
            metadata = NAME.equals(m.get(ArrowType.ExtensionType.EXTENSION_METADATA_KEY_NAME))
                    ? m.getOrDefault(ArrowType.ExtensionType.EXTENSION_METADATA_KEY_METADATA, "") : null;
        }
        return metadata == null ? null : PARSED.computeIfAbsent(metadata, json -> parse(json, field.getName()));
    }

    /** A physical row-major shape, with a permutation unless it is the identity. */
    static FixedShapeTensor of(long[] physicalShape, int[] permutation) {
        return new FixedShapeTensor(physicalShape, permutation, null);
    }

    private static FixedShapeTensor parse(String metadata, String field) {
        String where = NAME + " metadata of '" + field + "' (" + metadata + ")";
        JsonNode root;
        try {
            root = JSON.readTree(metadata);
        } catch (JacksonException e) {
            throw new IllegalArgumentException(where + " is not JSON: " + e.getOriginalMessage(), e);
        }
        if (root == null || !root.isObject() || !root.path("shape").isArray()) {
            throw new IllegalArgumentException(where + " has no \"shape\" array");
        }
        long[] shape = new long[root.get("shape").size()];
        for (int i = 0; i < shape.length; i++) {
            JsonNode e = root.get("shape").get(i);
            if (!e.canConvertToLong() || !e.isIntegralNumber() || e.asLong() < 0) {
                throw new IllegalArgumentException(where + ": shape[" + i + "] = " + e + " is not an extent");
            }
            shape[i] = e.asLong();
        }
        int n = shape.length;
        int[] permutation = identity(n);
        JsonNode p = root.get("permutation");
        if (p != null && !p.isNull()) {
            boolean[] seen = new boolean[n];
            if (!p.isArray() || p.size() != n) {
                throw new IllegalArgumentException(where + ": the permutation must list each of the " + n
                        + " dimensions once");
            }
            for (int i = 0; i < n; i++) {
                JsonNode e = p.get(i);
                int d = e.isIntegralNumber() ? e.asInt(-1) : -1;
                if (d < 0 || d >= n || seen[d]) {
                    throw new IllegalArgumentException(where + ": permutation[" + i + "] = " + e
                            + " does not make a permutation of 0.." + (n - 1));
                }
                seen[d] = true;
                permutation[i] = d;
            }
        }
        List<String> names = null;
        JsonNode dn = root.get("dim_names");
        if (dn != null && !dn.isNull()) {
            if (!dn.isArray() || dn.size() != n) {
                throw new IllegalArgumentException(where + ": dim_names must name each of the " + n + " dimensions");
            }
            names = new ArrayList<>(n);
            for (JsonNode e : dn) {
                if (!e.isTextual()) {
                    throw new IllegalArgumentException(where + ": dim_names holds " + e + ", not a string");
                }
                names.add(e.asText());
            }
            names = List.copyOf(names);
        }
        return new FixedShapeTensor(shape, permutation, names);
    }

    /** The metadata that describes this type, for a new field. */
    String toJson() {
        StringBuilder b = new StringBuilder("{\"shape\":").append(Arrays.toString(shape).replace(" ", ""));
        if (!Arrays.equals(permutation, identity(permutation.length))) {
            b.append(",\"permutation\":").append(Arrays.toString(permutation).replace(" ", ""));
        }
        return b.append('}').toString();
    }

    /** The extension-type keys of a field's metadata. */
    Map<String, String> fieldMetadata() {
        return Map.of(ArrowType.ExtensionType.EXTENSION_METADATA_KEY_NAME, NAME,
                ArrowType.ExtensionType.EXTENSION_METADATA_KEY_METADATA, toJson());
    }

    /** The logical shape: {@code shape[permutation[i]]}. */
    long[] logicalShape() {
        long[] s = new long[shape.length];
        for (int i = 0; i < s.length; i++) {
            s[i] = shape[permutation[i]];
        }
        return s;
    }

    /** The logical strides in elements: the physical row-major strides, permuted. */
    long[] logicalStrides() {
        long[] physical = RowMajor.strides(shape);
        long[] s = new long[shape.length];
        for (int i = 0; i < s.length; i++) {
            s[i] = physical[permutation[i]];
        }
        return s;
    }

    /** The names of the logical dimensions, in logical order; empty when there are none. */
    List<String> logicalDimNames() {
        if (dimNames == null) {
            return List.of();
        }
        return Arrays.stream(permutation).mapToObj(dimNames::get).collect(Collectors.toUnmodifiableList());
    }

    /** Checks that the column's FixedSizeList, of {@code listSize} values, holds one tensor per list. */
    void checkStorage(long listSize, String column) {
        long n;
        try {
            n = Arrays.stream(shape).anyMatch(e -> e == 0) ? 0 : Arrays.stream(shape).reduce(1, Math::multiplyExact);
        } catch (ArithmeticException overflow) {
            n = -1;
        }
        if (n != listSize) {
            throw new IllegalArgumentException(NAME + " '" + column + "' has shape " + Arrays.toString(shape)
                    + ", which does not hold the " + listSize + " values of its FixedSizeList");
        }
    }

    static int[] identity(int n) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        return p;
    }
}
