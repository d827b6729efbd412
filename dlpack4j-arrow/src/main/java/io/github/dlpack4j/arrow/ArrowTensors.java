package io.github.dlpack4j.arrow;

import io.github.dlpack4j.Tensor;
import java.util.List;
import java.util.Objects;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;

/**
 * Apache Arrow Java vectors as dlpack4j {@link Tensor}s and back, without copying the values: a
 * column of Arrow data goes to NumPy, PyTorch, JAX or native code through DLPack, and a tensor comes
 * back as an Arrow column.
 *
 * <table>
 *   <caption>What becomes what</caption>
 *   <tr><th>Arrow</th><th>tensor</th></tr>
 *   <tr><td>{@code TinyIntVector} ... {@code BigIntVector}, {@code UInt1Vector} ... {@code UInt8Vector},
 *       {@code Float2Vector}, {@code Float4Vector}, {@code Float8Vector}</td>
 *       <td>1-d of int8 ... int64, uint8 ... uint64, float16, float32, float64</td></tr>
 *   <tr><td>{@code FixedSizeListVector} of those ({@code FixedSizeList<float32>[384]} embeddings)</td>
 *       <td>2-d {@code [rows, listSize]}; nested lists n-d</td></tr>
 *   <tr><td>{@code arrow.fixed_shape_tensor} column (a FixedSizeList with the extension's metadata,
 *       or a registered {@code ExtensionTypeVector} of it)</td>
 *       <td>{@code [rows, *shape]} in the logical order: the {@code permutation} becomes strides;
 *       {@link #dimNames} gives the {@code dim_names}</td></tr>
 * </table>
 *
 * <p><b>Lifetimes.</b> A tensor from {@link #of} holds one reference to the Arrow buffer it views
 * (Arrow's own reference count, {@code ReferenceManager.retain}), released when the tensor is closed
 * (or collected) and every DLPack export of it was deleted: the vector may be closed first. Closing
 * the allocator while a tensor still holds a buffer is Arrow's leak error, an
 * {@link IllegalStateException} from {@code close()}, and the memory stays valid. A vector from
 * {@link #toVector} holds the tensor's memory (a {@link Tensor#share()}) until Arrow frees the
 * buffer: the tensor may be closed first. The memory is counted by the allocator either way.
 *
 * <p>Nulls have no place in a tensor: {@link #of} refuses a vector with nulls in the rows asked for,
 * unless {@link NullPolicy#ACCEPT} says the values under them are meaningful. It reads the validity
 * bitmaps to know (one bit per value), except of fields declared not nullable, as
 * {@link #toVector}'s are. {@code BitVector}
 * (bit-packed) and variable-width vectors are refused with what to use instead.
 *
 * <p>For example:
 * {@snippet :
 * try (BufferAllocator allocator = new RootAllocator();
 *      Float4Vector column = new Float4Vector("x", allocator)) {
 *     column.allocateNew(3);
 *     column.set(0, 1f);
 *     column.set(1, 2f);
 *     column.set(2, 3f);
 *     column.setValueCount(3);
 *     try (Tensor t = ArrowTensors.of(column);                     // [3] float32 over Arrow's buffer
 *          FieldVector back = ArrowTensors.toVector(t, allocator)) { // a vector over the same memory
 *         t.setDouble(10, 0);                                      // column.get(0) is now 10
 *     }
 * }
 * }
 */
public final class ArrowTensors {
    private ArrowTensors() {}

    /**
     * A tensor over all rows of {@code vector}'s values, without copying; refuses nulls.
     *
     * @param vector a fixed-width or fixed-size-list vector (see the table above)
     * @return an owning tensor: close it (its exports keep the Arrow buffer as long as they live)
     * @throws IllegalArgumentException for a vector with nulls or one that no tensor can view (the
     *                                  message says what to use instead)
     */
    public static Tensor of(FieldVector vector) {
        return of(vector, 0, vector.getValueCount(), NullPolicy.REFUSE);
    }

    /**
     * A tensor over rows {@code [fromRow, fromRow + rows)} of {@code vector}, without copying;
     * refuses nulls in those rows.
     *
     * @param vector  a fixed-width or fixed-size-list vector (see the table above)
     * @param fromRow the first row the tensor takes
     * @param rows    how many rows it takes: the extent of its first dimension
     * @return an owning tensor: close it (its exports keep the Arrow buffer as long as they live)
     * @throws IndexOutOfBoundsException if the rows are not all in the vector
     * @throws IllegalArgumentException  as {@link #of(FieldVector)}
     */
    public static Tensor of(FieldVector vector, long fromRow, long rows) {
        return of(vector, fromRow, rows, NullPolicy.REFUSE);
    }

    /**
     * A tensor over rows {@code [fromRow, fromRow + rows)} of {@code vector}, without copying, with
     * nulls as {@code nulls} says. The tensor views the buffer the vector has now: a vector that later
     * grows into a new buffer no longer shares the tensor's memory.
     *
     * @param vector  a fixed-width or fixed-size-list vector (see the table above)
     * @param fromRow the first row the tensor takes
     * @param rows    how many rows it takes: the extent of its first dimension
     * @param nulls   whether null rows are refused or their values taken as they are
     * @return an owning tensor: close it (its exports keep the Arrow buffer as long as they live)
     * @throws IndexOutOfBoundsException if the rows are not all in the vector
     * @throws IllegalArgumentException  as {@link #of(FieldVector)}
     */
    public static Tensor of(FieldVector vector, long fromRow, long rows, NullPolicy nulls) {
        Objects.requireNonNull(vector, "vector");
        Objects.requireNonNull(nulls, "nulls");
        return ArrowToTensor.of(vector, fromRow, rows, nulls);
    }

    /**
     * The names of the dimensions after the first (the rows) of {@code of(vector)}, from an
     * {@code arrow.fixed_shape_tensor}'s {@code dim_names}, in the tensor's (logical) order; empty
     * if the vector names none.
     *
     * @param vector a vector that {@link #of(FieldVector)} takes
     * @return one name per dimension after the rows, or an empty list
     */
    public static List<String> dimNames(FieldVector vector) {
        FixedShapeTensor t = FixedShapeTensor.of(vector.getField());
        return t == null ? List.of() : t.logicalDimNames();
    }

    /**
     * A vector named {@code "tensor"} over {@code tensor}'s memory; see
     * {@link #toVector(Tensor, BufferAllocator, String)}.
     *
     * @param tensor    a writable CPU tensor of one dimension or more, compact or a permuted view of compact rows
     * @param allocator accounts for the tensor's bytes and makes the vector's validity bitmaps
     * @return a new vector; the caller closes it
     * @throws IllegalArgumentException as {@link #toVector(Tensor, BufferAllocator, String)}
     */
    public static FieldVector toVector(Tensor tensor, BufferAllocator allocator) {
        return toVector(tensor, allocator, "tensor");
    }

    /**
     * A vector over {@code tensor}'s memory, without copying the values, its first dimension the
     * rows: a primitive vector ({@code Float4Vector} for float32, ...) for a 1-d tensor, a
     * {@code FixedSizeListVector} for 2-d, and an {@code arrow.fixed_shape_tensor} column for more
     * dimensions (with a {@code permutation} when the tensor is a permuted view of compact rows).
     * The memory stays allocated until the vector is closed, even when the tensor is closed first.
     *
     * @param tensor    a writable CPU tensor of one dimension or more, compact or a permuted view of compact rows
     * @param allocator accounts for the tensor's bytes and makes the vector's validity bitmaps
     * @param name      the vector's field name
     * @return a new vector; the caller closes it
     * @throws IllegalArgumentException if the tensor is not compact (pass {@link Tensor#copy()}),
     *                                  read-only, 0-d, not in CPU memory, of a dtype no Arrow vector
     *                                  holds, or longer than a vector can be
     */
    public static FieldVector toVector(Tensor tensor, BufferAllocator allocator, String name) {
        Objects.requireNonNull(tensor, "tensor");
        Objects.requireNonNull(allocator, "allocator");
        Objects.requireNonNull(name, "name");
        return TensorToArrow.toVector(tensor, allocator, name);
    }
}
