package io.github.dlpack4j;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Reference;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;
import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

/**
 * An n-dimensional array over native memory: the Java side of every DLPack exchange.
 *
 * <p>A tensor is either <em>owning</em> (made by {@link #of}, {@link #zeros}, {@link #copy}, or
 * handed out by a {@link ManagedTensor}) or a <em>view</em> of one (made by {@link #slice},
 * {@link #permute}, {@link #reshape} and the like; views share the memory and the open/closed state
 * of the tensor they came from). Memory from {@link #wrap} is <em>borrowed</em>: its owner is the
 * caller's {@code Arena}.
 *
 * <p>Strides count elements, as in DLPack, and may be negative or zero. Sub-byte types (FP4, FP6,
 * int4, ...) are packed little bit-endian and are always compact; their elements are read and
 * written unpacked, one value at a time.
 *
 * <p><b>Lifetime.</b> {@link #close()} on an owning tensor makes it and all its views unusable (any
 * access throws {@link IllegalStateException}); the memory itself is freed when the tensor is
 * closed <em>and</em> every DLPack export of it was deleted by its consumer. A tensor that is never
 * closed is released by a {@code Cleaner} once unreachable. {@code close()} on a view does nothing.
 * Tensors are safe to read from several threads; concurrent writes to the same element are a race
 * in the data, as in C, but never a crash.
 *
 * <p>For example:
 * {@snippet :
 * try (Tensor x = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
 *     x.setDouble(42, 0, 0);
 *     Tensor t = x.transpose();                       // a view: shape [3, 2], strides [1, 3]
 *     double v = t.getDouble(2, 1);                   // 6.0
 *     float[] rowMajor = t.toFloatArray();            // a copy out: 42, 4, 2, 5, 3, 6
 *     FloatBuffer fb = x.asBuffer(FloatBuffer.class); // zero-copy
 * }
 * }
 */
public final class Tensor implements AutoCloseable, DlpackExporter {
    private static final int PREVIEW_THRESHOLD = 1000;
    private static final int PREVIEW_EDGE = 3;
    private static final Map<Class<? extends Buffer>, DataType> BUFFER_TYPES = Map.of(
            DoubleBuffer.class, DataType.FLOAT64, FloatBuffer.class, DataType.FLOAT32,
            LongBuffer.class, DataType.INT64, IntBuffer.class, DataType.INT32,
            ShortBuffer.class, DataType.INT16, CharBuffer.class, DataType.UINT16);

    private final MemoryOwner memory;
    private final TensorHandle handle;
    private final boolean owning;
    /** Byte offset of element [0, ..., 0] from {@code memory.base}. */
    private final long offset;
    private final long[] shape;
    private final long[] strides;
    private final DataType dtype;
    private final Device device;
    private final boolean readOnly;
    private final boolean paddedSubByte;
    private final ElementAccess access;
    private final long numel;
    /** Export structs kept for reuse, per ABI, for an owning tensor; null for a view. */
    private final ExportPools exportPools;

    Tensor(MemoryOwner memory, TensorHandle handle, boolean owning, long offset, long[] shape, long[] strides,
           DataType dtype, Device device, boolean readOnly, boolean paddedSubByte) {
        this(memory, handle, owning, offset, shape, strides, dtype, device, readOnly, paddedSubByte, Shapes.numel(shape));
    }

    /** With the element count known already ({@code numel}, the product of {@code shape}): an import's. */
    Tensor(MemoryOwner memory, TensorHandle handle, boolean owning, long offset, long[] shape, long[] strides,
           DataType dtype, Device device, boolean readOnly, boolean paddedSubByte, long numel) {
        this.memory = memory;
        this.handle = handle;
        this.owning = owning;
        this.offset = offset;
        this.shape = shape;
        this.strides = strides;
        this.dtype = dtype;
        this.device = device;
        this.readOnly = readOnly;
        this.paddedSubByte = paddedSubByte;
        this.access = ElementAccess.of(dtype, dtype.isSubByte() && !paddedSubByte);
        this.numel = numel;
        this.exportPools = owning ? new ExportPools() : null;
    }

    // ---------------------------------------------------------------- factories

    /**
     * A new compact tensor of zeros. Sub-byte types are packed.
     *
     * @param dtype the element type
     * @param shape the extent of each dimension; none for a scalar
     * @return a new owning tensor on the CPU; the caller closes it
     */
    public static Tensor zeros(DataType dtype, long... shape) {
        Tensor t = allocate(dtype, shape);
        t.memory.base.fill((byte) 0);
        return t;
    }

    private static Tensor allocate(DataType dtype, long[] shape) {
        Objects.requireNonNull(dtype, "dtype");
        long[] s = shape.clone();
        long n = Shapes.checkedNumel(s);
        long bytes = dtype.storageBytes(n, false);
        MemorySegment seg = NativeMemory.allocateData(bytes);
        MemoryOwner m = MemoryOwner.create(seg, () -> NativeMemory.free(seg, bytes), false);
        TensorHandle h = new TensorHandle(m.ownerHold());
        return new Tensor(m, h, true, 0, s, Shapes.rowMajorStrides(s), dtype, Device.CPU, false, false);
    }

    /**
     * A FLOAT64 tensor holding a copy of {@code values} in row-major order; no shape means 1-d.
     *
     * @param values the elements in row-major order
     * @param shape  the extent of each dimension, whose product must be {@code values.length}
     * @return a new owning tensor; the caller closes it
     * @throws IllegalArgumentException if {@code shape} holds another number of elements
     */
    public static Tensor of(double[] values, long... shape) {
        return fromArray(DataType.FLOAT64, values, values.length, shape, JAVA_DOUBLE_UNALIGNED);
    }

    /**
     * A FLOAT32 tensor holding a copy of {@code values}; no shape means 1-d.
     *
     * @param values the elements in row-major order
     * @param shape  the extent of each dimension, whose product must be {@code values.length}
     * @return a new owning tensor; the caller closes it
     * @throws IllegalArgumentException if {@code shape} holds another number of elements
     */
    public static Tensor of(float[] values, long... shape) {
        return fromArray(DataType.FLOAT32, values, values.length, shape, JAVA_FLOAT_UNALIGNED);
    }

    /**
     * An INT64 tensor holding a copy of {@code values}; no shape means 1-d.
     *
     * @param values the elements in row-major order
     * @param shape  the extent of each dimension, whose product must be {@code values.length}
     * @return a new owning tensor; the caller closes it
     * @throws IllegalArgumentException if {@code shape} holds another number of elements
     */
    public static Tensor of(long[] values, long... shape) {
        return fromArray(DataType.INT64, values, values.length, shape, JAVA_LONG_UNALIGNED);
    }

    /**
     * An INT32 tensor holding a copy of {@code values}; no shape means 1-d.
     *
     * @param values the elements in row-major order
     * @param shape  the extent of each dimension, whose product must be {@code values.length}
     * @return a new owning tensor; the caller closes it
     * @throws IllegalArgumentException if {@code shape} holds another number of elements
     */
    public static Tensor of(int[] values, long... shape) {
        return fromArray(DataType.INT32, values, values.length, shape, JAVA_INT_UNALIGNED);
    }

    /**
     * An INT16 tensor holding a copy of {@code values}; no shape means 1-d.
     *
     * @param values the elements in row-major order
     * @param shape  the extent of each dimension, whose product must be {@code values.length}
     * @return a new owning tensor; the caller closes it
     * @throws IllegalArgumentException if {@code shape} holds another number of elements
     */
    public static Tensor of(short[] values, long... shape) {
        return fromArray(DataType.INT16, values, values.length, shape, JAVA_SHORT_UNALIGNED);
    }

    /**
     * An INT8 tensor holding a copy of {@code values}; no shape means 1-d.
     *
     * @param values the elements in row-major order
     * @param shape  the extent of each dimension, whose product must be {@code values.length}
     * @return a new owning tensor; the caller closes it
     * @throws IllegalArgumentException if {@code shape} holds another number of elements
     */
    public static Tensor of(byte[] values, long... shape) {
        return fromArray(DataType.INT8, values, values.length, shape, JAVA_BYTE);
    }

    /**
     * A UINT16 tensor holding a copy of {@code values}; no shape means 1-d.
     *
     * @param values the elements in row-major order
     * @param shape  the extent of each dimension, whose product must be {@code values.length}
     * @return a new owning tensor; the caller closes it
     * @throws IllegalArgumentException if {@code shape} holds another number of elements
     */
    public static Tensor of(char[] values, long... shape) {
        return fromArray(DataType.UINT16, values, values.length, shape, ValueLayout.JAVA_CHAR_UNALIGNED);
    }

    /**
     * A BOOL tensor (one byte per element, 0 or 1) holding {@code values}; no shape means 1-d.
     *
     * @param values the elements in row-major order
     * @param shape  the extent of each dimension, whose product must be {@code values.length}
     * @return a new owning tensor; the caller closes it
     * @throws IllegalArgumentException if {@code shape} holds another number of elements
     */
    public static Tensor of(boolean[] values, long... shape) {
        byte[] bytes = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            bytes[i] = (byte) (values[i] ? 1 : 0);
        }
        return fromArray(DataType.BOOL, bytes, values.length, shape, JAVA_BYTE);
    }

    private static Tensor fromArray(DataType dtype, Object array, int length, long[] shape, ValueLayout layout) {
        long[] s = shape.length == 0 ? new long[] {length} : shape;
        if (Shapes.checkedNumel(s) != length) {
            throw new IllegalArgumentException("shape " + Arrays.toString(s) + " holds " + Shapes.checkedNumel(s)
                    + " elements but the array has " + length);
        }
        Tensor t = allocate(dtype, s);
        MemorySegment.copy(array, 0, t.memory.base, layout, 0, length);
        return t;
    }

    /**
     * A compact row-major view of memory the caller owns. The tensor borrows {@code segment}: the
     * segment's arena decides how long the data lives, and must outlive every export of it.
     *
     * @param segment native memory holding the elements from its first byte on
     * @param dtype   the element type
     * @param shape   the extent of each dimension; none for a scalar
     * @return a tensor that borrows {@code segment}; read-only if the segment is
     * @throws IllegalArgumentException if the elements do not fit in the segment, or it is a heap segment
     */
    public static Tensor wrap(MemorySegment segment, DataType dtype, long... shape) {
        return wrap(segment, 0, dtype, shape, Shapes.rowMajorStrides(shape));
    }

    /**
     * A strided view of memory the caller owns: element {@code [0, ..., 0]} at {@code byteOffset}
     * into {@code segment}, strides in elements (negative and zero allowed). Every reachable element
     * must lie inside the segment. Sub-byte types must be compact.
     *
     * @param segment    native memory holding the elements
     * @param byteOffset where element {@code [0, ..., 0]} lies, in bytes from the segment's start
     * @param dtype      the element type
     * @param shape      the extent of each dimension
     * @param strides    the step of each dimension in elements, as many as {@code shape} has
     * @return a tensor that borrows {@code segment}; read-only if the segment is
     * @throws IllegalArgumentException if an element would lie outside the segment, the lengths of
     *                                  {@code shape} and {@code strides} differ, or it is a heap segment
     */
    public static Tensor wrap(MemorySegment segment, long byteOffset, DataType dtype, long[] shape, long[] strides) {
        return wrapped(segment, byteOffset, dtype, shape, strides, null);
    }

    /**
     * A strided view of memory that another library allocated and lends until {@code release} runs:
     * how a buffer with a reference count of its own (an Apache Arrow buffer, for one) becomes a
     * tensor, and a DLPack export, without a copy. The tensor holds the one reference the caller took
     * for it: {@code release} runs exactly once, on whichever thread lets go last, when this tensor
     * (and every {@link #share()} of it) was closed, or collected unclosed, <em>and</em> every export
     * of it was deleted. Until then the memory must stay valid; afterwards every access through the
     * tensor, its views and the segments {@link #data()} gave throws {@link IllegalStateException},
     * whatever the scope of {@code segment} (use a global one, such as
     * {@code MemorySegment.ofAddress(address).reinterpret(size)}). An exception from {@code release}
     * reaches the caller of the {@code close()} that ran it, or, when the close came while an element
     * access or a {@link #withData} body was in flight, the caller of that access, which runs the
     * release as it ends (a deleter prints it instead: nothing is thrown into C). Arguments as in {@link #wrap(MemorySegment, long, DataType, long[], long[])}.
     *
     * @param segment    native memory holding the elements, in a global scope
     * @param byteOffset where element {@code [0, ..., 0]} lies, in bytes from the segment's start
     * @param dtype      the element type
     * @param shape      the extent of each dimension
     * @param strides    the step of each dimension in elements, as many as {@code shape} has
     * @param release    gives the memory back; called at most once, from any thread
     * @return an owning tensor that holds the caller's reference; the caller closes it
     * @throws IllegalArgumentException if an element would lie outside the segment; {@code release}
     *                                  has not run then, and the reference is still the caller's
     */
    public static Tensor wrap(MemorySegment segment, long byteOffset, DataType dtype, long[] shape, long[] strides,
                              Runnable release) {
        return wrapped(segment, byteOffset, dtype, shape, strides, Objects.requireNonNull(release, "release"));
    }

    /** The two {@code wrap}s: {@code release} null for borrowed memory. */
    private static Tensor wrapped(MemorySegment segment, long byteOffset, DataType dtype, long[] shape, long[] strides,
                                  Runnable release) {
        Objects.requireNonNull(segment, "segment");
        if (!segment.isNative()) {
            throw new IllegalArgumentException("only native segments can be wrapped: a heap segment has no address "
                    + "that native code could use; copy it into an Arena's segment first");
        }
        long[] s = shape.clone();
        long[] st = strides.clone();
        if (s.length != st.length) {
            throw new IllegalArgumentException("shape " + Arrays.toString(s) + " and strides " + Arrays.toString(st)
                    + " differ in length");
        }
        Shapes.Extent e = Shapes.extent(s, st, dtype, false);
        if (e.numel() > 0) {
            long first;
            long end;
            try {
                first = Math.addExact(byteOffset, e.minByte());
                end = Math.addExact(byteOffset, e.endByte());
            } catch (ArithmeticException overflow) {
                first = -1;
                end = -1;
            }
            if (first < 0 || end > segment.byteSize()) {
                throw new IllegalArgumentException("elements reach bytes [" + (byteOffset + e.minByte()) + ", "
                        + (byteOffset + e.endByte()) + "), outside the segment of " + segment.byteSize() + " bytes");
            }
        } else if (byteOffset < 0 || byteOffset > segment.byteSize()) {
            throw new IllegalArgumentException("byteOffset " + byteOffset + " outside the segment of "
                    + segment.byteSize() + " bytes");
        }
        // Borrowed memory lives by the caller's scope; lent memory by this tensor's holders.
        MemoryOwner m = release == null
                ? MemoryOwner.create(segment, () -> { }, true)
                : MemoryOwner.create(segment, release, false);
        return new Tensor(m, new TensorHandle(m.ownerHold()), true, byteOffset, s, st, dtype, Device.CPU,
                segment.isReadOnly(), false);
    }

    // ---------------------------------------------------------------- metadata

    /** The extent of each dimension (a copy). */
    public long[] shape() {
        return shape.clone();
    }

    /** {@return the stride of each dimension in elements (a copy)} */
    public long[] strides() {
        return strides.clone();
    }

    /** The element type. */
    public DataType dtype() {
        return dtype;
    }

    /** Where the data lives. */
    public Device device() {
        return device;
    }

    /** {@return the number of dimensions} */
    public int ndim() {
        return shape.length;
    }

    /** {@return the number of elements: the product of the shape (1 for a scalar)} */
    public long numel() {
        return numel;
    }

    /** {@return whether writes are refused} */
    public boolean isReadOnly() {
        return readOnly;
    }

    /** {@return whether the elements are compact in row-major order (dimensions of extent 1 ignored)} */
    public boolean isContiguous() {
        return Shapes.isRowMajor(shape, strides);
    }

    /** {@return whether sub-byte elements are padded to one byte each instead of packed} */
    public boolean isSubBytePadded() {
        return paddedSubByte;
    }

    /**
     * The flags its exports carry: {@link DlpackFlags#READ_ONLY} for a read-only tensor,
     * {@link DlpackFlags#IS_SUBBYTE_TYPE_PADDED} for padded sub-byte data.
     */
    @Override
    public long flags() {
        return (readOnly ? DlpackFlags.READ_ONLY : 0) | (paddedSubByte ? DlpackFlags.IS_SUBBYTE_TYPE_PADDED : 0);
    }

    /**
     * A fresh managed struct for {@code request}: versioned or legacy as it asks, sharing this
     * tensor's memory, or, for {@code copy=TRUE}, a compact copy marked {@link DlpackFlags#IS_COPIED}.
     *
     * @throws DlpackException       if the request names another device, or a stream for CPU memory
     *                               (which has none), or asks the legacy ABI for read-only or padded data
     * @throws IllegalStateException if the tensor is closed
     */
    @Override
    public MemorySegment export(ExportRequest request) {
        if (request.device() == null && request.stream() == null && request.copy() == null) {
            return Exports.export(this, request.versioned(), 0); // the common request, kept small to inline
        }
        return exportAsAsked(request);
    }

    private MemorySegment exportAsAsked(ExportRequest request) {
        if (request.device() != null && !request.device().equals(device)) {
            throw new DlpackException("the tensor is on " + device + ", not " + request.device()
                    + " (dlpack4j does not copy between devices)");
        }
        if (request.stream() != null && device.type() == DeviceType.CPU) {
            throw new DlpackException("a " + device + " tensor takes no stream (got " + request.stream() + ")");
        }
        // Elsewhere any stream is fine: Java queues no work on devices, so there is nothing to order.
        if (Boolean.TRUE.equals(request.copy())) {
            try (Tensor c = copy()) {
                return Exports.export(c, request.versioned(), request.versioned() ? DlpackFlags.IS_COPIED : 0);
            }
        }
        return Exports.export(this, request.versioned(), 0);
    }

    /** {@return whether {@link #close()} was called on this tensor or on the tensor it is a view of} */
    public boolean isClosed() {
        return handle.isClosed() || !memory.isAlive();
    }

    /**
     * {@return the address of element {@code [0, ..., 0]}, on whatever device the tensor lives} (A
     * device pointer for CUDA.) For handing to native code; the tensor must stay open while it is used.
     *
     * @throws IllegalStateException if the tensor is closed
     */
    public long dataPointer() {
        checkOpen();
        return memory.base.address() + offset;
    }

    /**
     * Exactly the bytes the elements reach, from the lowest to the highest address. The segment is
     * checked by the JVM: once the memory is released, access to it throws
     * {@link IllegalStateException}, on every thread. Read-only tensors give a read-only segment. Keep
     * the tensor (or its owner) reachable while you use the segment: an owner that was never closed is
     * released by the cleaner once unreachable, and the segment then fails, safely, like a closed one.
     *
     * <p><b>What it costs.</b> The first {@code data()} of a block of memory binds it to a shared
     * {@code Arena}, and releasing that memory closes the arena: the JVM then makes every thread
     * agree that none is inside an access (a handshake, tens of microseconds, more with many
     * threads). That is what lets the segment go to other threads and be kept. To read or write the
     * memory on one thread, for the length of a call, {@link #withData} costs no handshake: prefer it
     * for per-request work on imported tensors.
     *
     * @return a segment over the tensor's memory, not a copy
     * @throws IllegalStateException         if the tensor is closed
     * @throws UnsupportedOperationException if the tensor lives on a device the CPU cannot address
     */
    public MemorySegment data() {
        checkHost();
        checkOpen();
        return reachable(memory.scopedBase());
    }

    /**
     * Runs {@code body} with exactly the bytes the elements reach (the segment {@link #data()} would
     * give) and returns what it returns: raw access at the cost of an element read, for work done on
     * the calling thread within the call.
     *
     * <p>While {@code body} runs, the memory stays allocated: a {@link #close()} from another thread
     * (or the release of the last export) waits for it, and the memory is freed only after
     * {@code body} returned (by the thread that ran it), so a native call that {@code body} makes with
     * the segment is safe. The
     * segment is confined: it belongs to the calling thread and to the call. Used after
     * {@code body} returned, it throws {@link IllegalStateException}; used from another thread, even
     * during the call, it throws {@link WrongThreadException}; it never reads released memory. A
     * {@code close()} of this tensor inside {@code body} is allowed: the memory goes once
     * {@code body} is done.
     *
     * <p>Use {@link #data()} instead when the segment must outlive the call or be shared with other
     * threads (a {@code BufferedImage} over the tensor, a buffer handed to a pool); it pays a thread
     * handshake once, when the memory is released. Memory that {@link #wrap(MemorySegment, DataType, long...)}
     * borrows (no release action) keeps the caller's own segment and scope in both: its lifetime is
     * the caller's arena, not the tensor's.
     *
     * {@snippet :
     * try (Tensor t = Tensor.of(new float[] {1, 2, 3})) {
     *     float sum = t.withData(bytes -> {
     *         float s = 0;
     *         for (long i = 0; i < bytes.byteSize(); i += 4) {
     *             s += bytes.get(ValueLayout.JAVA_FLOAT_UNALIGNED, i);  // 6.0
     *         }
     *         return s;
     *     });
     * }
     * }
     *
     * @param <R>  what {@code body} computes
     * @param body the work on the tensor's bytes, a read-only segment for a read-only tensor
     * @return what {@code body} returned
     * @throws IllegalStateException         if the tensor is closed
     * @throws UnsupportedOperationException if the tensor lives on a device the CPU cannot address
     */
    public <R> R withData(Function<? super MemorySegment, ? extends R> body) {
        Objects.requireNonNull(body, "body");
        MemoryOwner m = enterRead();
        try {
            return m.confined(this, body);
        } finally {
            m.exit();
        }
    }

    /** The bytes the elements reach within {@code seg} (the memory's base, in some scope); read-only if the tensor is. */
    MemorySegment reachable(MemorySegment seg) {
        MemorySegment slice;
        if (numel == 0) {
            slice = seg.asSlice(0, 0);
        } else if (access.isPacked()) {
            slice = seg.asSlice(offset, dtype.storageBytes(numel, false));
        } else {
            Shapes.Extent e = Shapes.extent(shape, strides, dtype, paddedSubByte);
            slice = seg.asSlice(offset + e.minByte(), e.endByte() - e.minByte());
        }
        return readOnly ? slice.asReadOnly() : slice;
    }

    // ---------------------------------------------------------------- typed zero-copy access

    /**
     * The data as a segment of Java elements of {@code elementType} (e.g. {@code float.class} for
     * FLOAT32), without copying. Like DLPack.jl's typed {@code unsafe_wrap}, it refuses a dtype that is
     * not {@code elementType}'s ({@link DataType#ofJavaType}) or data that is not contiguous.
     *
     * @param elementType a primitive class such as {@code float.class}
     * @return the tensor's memory, read-only for a read-only tensor
     * @throws IllegalArgumentException if {@code elementType} is not a primitive with a dtype
     * @throws DlpackException naming both the tensor's dtype and layout and the requested type
     */
    public MemorySegment asSegment(Class<?> elementType) {
        DataType wanted = DataType.ofJavaType(elementType);
        checkTyped(wanted, elementType.getName());
        return data();
    }

    /**
     * The data as an NIO buffer in native byte order, without copying: {@code FloatBuffer} needs
     * FLOAT32, {@code DoubleBuffer} FLOAT64, {@code IntBuffer} INT32, {@code LongBuffer} INT64,
     * {@code ShortBuffer} INT16, {@code CharBuffer} UINT16; a {@code ByteBuffer} takes the raw bytes of
     * any dtype. The data must be contiguous. The buffer is read-only for a read-only tensor and
     * fails with {@link IllegalStateException} once the memory is released.
     *
     * @param <B>        the buffer class
     * @param bufferType {@code ByteBuffer.class} or one of the typed buffer classes above
     * @return a buffer over the tensor's memory, positioned at its first byte
     * @throws IllegalArgumentException if {@code bufferType} is none of those
     * @throws DlpackException naming both the tensor's dtype and layout and the requested type
     */
    public <B extends Buffer> B asBuffer(Class<B> bufferType) {
        DataType wanted = bufferType == ByteBuffer.class ? dtype : BUFFER_TYPES.get(bufferType);
        if (wanted == null) {
            throw new IllegalArgumentException("unsupported buffer type " + bufferType.getName());
        }
        checkTyped(wanted, bufferType.getSimpleName());
        ByteBuffer bytes = data().asByteBuffer().order(ByteOrder.nativeOrder());
        Buffer b = switch (bufferType.getSimpleName()) {
            case "ByteBuffer" -> bytes;
            case "DoubleBuffer" -> bytes.asDoubleBuffer();
            case "FloatBuffer" -> bytes.asFloatBuffer();
            case "LongBuffer" -> bytes.asLongBuffer();
            case "IntBuffer" -> bytes.asIntBuffer();
            case "ShortBuffer" -> bytes.asShortBuffer();
            default -> bytes.asCharBuffer();
        };
        return bufferType.cast(b);
    }

    private void checkTyped(DataType wanted, String javaName) {
        if (!dtype.equals(wanted) || !isContiguous() || paddedSubByte) {
            throw new DlpackException("cannot view a " + dtype + " tensor of shape " + Arrays.toString(shape)
                    + " and strides " + Arrays.toString(strides) + (isContiguous() ? "" : " (not contiguous)")
                    + " as " + javaName + " (" + wanted + ", contiguous)"
                    + (isContiguous() ? "" : "; copy() it first"));
        }
    }

    // ---------------------------------------------------------------- elements

    /**
     * {@return the element at {@code index} as a double (the real part of a complex, 0/1 for bool)}
     *
     * @param index one position per dimension, each within its extent
     */
    public double getDouble(long... index) {
        long pos = position(index);
        MemoryOwner m = enterRead();
        try {
            return access.getDouble(m.base, pos);
        } finally {
            m.exit();
        }
    }

    /**
     * {@return the element at {@code index} as a float}
     *
     * @param index one position per dimension, each within its extent
     */
    public float getFloat(long... index) {
        return (float) getDouble(index);
    }

    /**
     * {@return the element at {@code index} as a long} Integers exactly (UINT64 as its two's
     * complement bits), floating point truncated toward zero, bool as 0/1.
     *
     * @param index one position per dimension, each within its extent
     */
    public long getLong(long... index) {
        long pos = position(index);
        MemoryOwner m = enterRead();
        try {
            return access.getLong(m.base, pos);
        } finally {
            m.exit();
        }
    }

    /**
     * {@return the element at {@code index} as a boolean: whether it is non-zero}
     *
     * @param index one position per dimension, each within its extent
     */
    public boolean getBoolean(long... index) {
        return access.isComplex() ? getDouble(index) != 0 || getImag(index) != 0 : getDouble(index) != 0;
    }

    /**
     * {@return the imaginary part of the complex element at {@code index}; 0 for real dtypes}
     *
     * @param index one position per dimension, each within its extent
     */
    public double getImag(long... index) {
        long pos = position(index);
        MemoryOwner m = enterRead();
        try {
            return access.getImag(m.base, pos);
        } finally {
            m.exit();
        }
    }

    /**
     * Stores {@code value} at {@code index}, converted to the dtype (rounded to nearest for small floats).
     *
     * @param value the number to store
     * @param index one position per dimension, each within its extent
     * @throws UnsupportedOperationException if the tensor is read-only
     */
    public void setDouble(double value, long... index) {
        long pos = position(index);
        MemoryOwner m = enterWrite();
        try {
            access.setDouble(m.base, pos, value);
        } finally {
            m.exit();
        }
    }

    /**
     * Stores {@code value} at {@code index}, converted to the dtype (integers keep their low bits).
     *
     * @param value the number to store
     * @param index one position per dimension, each within its extent
     * @throws UnsupportedOperationException if the tensor is read-only
     */
    public void setLong(long value, long... index) {
        long pos = position(index);
        MemoryOwner m = enterWrite();
        try {
            access.setLong(m.base, pos, value);
        } finally {
            m.exit();
        }
    }

    /**
     * Stores {@code value} at {@code index} as 1 or 0 in the dtype.
     *
     * @param value true for 1, false for 0
     * @param index one position per dimension, each within its extent
     * @throws UnsupportedOperationException if the tensor is read-only
     */
    public void setBoolean(boolean value, long... index) {
        setLong(value ? 1 : 0, index);
    }

    /**
     * Stores a complex value at {@code index}; real dtypes keep only {@code real}.
     *
     * @param real  the real part
     * @param imag  the imaginary part, dropped by real dtypes
     * @param index one position per dimension, each within its extent
     * @throws UnsupportedOperationException if the tensor is read-only
     */
    public void setComplex(double real, double imag, long... index) {
        long pos = position(index);
        MemoryOwner m = enterWrite();
        try {
            access.setComplex(m.base, pos, real, imag);
        } finally {
            m.exit();
        }
    }

    // ---------------------------------------------------------------- bulk copy-out

    /** {@return every element as a double, in row-major order} Complex elements give their real parts. */
    public double[] toDoubleArray() {
        double[] out = new double[arrayLength(1)];
        if (dtype.equals(DataType.FLOAT64) && isContiguous()) {
            return bulk(out, JAVA_DOUBLE_UNALIGNED);
        }
        readEach((i, pos) -> out[(int) i] = access.getDouble(memory.base, pos));
        return out;
    }

    /** {@return every complex element as interleaved (real, imaginary) pairs, in row-major order} */
    public double[] toComplexArray() {
        double[] out = new double[arrayLength(2)];
        readEach((i, pos) -> {
            out[(int) (2 * i)] = access.getDouble(memory.base, pos);
            out[(int) (2 * i + 1)] = access.getImag(memory.base, pos);
        });
        return out;
    }

    /** {@return every element as a float, in row-major order} */
    public float[] toFloatArray() {
        float[] out = new float[arrayLength(1)];
        if (dtype.equals(DataType.FLOAT32) && isContiguous()) {
            return bulk(out, JAVA_FLOAT_UNALIGNED);
        }
        readEach((i, pos) -> out[(int) i] = (float) access.getDouble(memory.base, pos));
        return out;
    }

    /** {@return every element as a long (see {@link #getLong}), in row-major order} */
    public long[] toLongArray() {
        long[] out = new long[arrayLength(1)];
        if (dtype.equals(DataType.INT64) && isContiguous()) {
            return bulk(out, JAVA_LONG_UNALIGNED);
        }
        readEach((i, pos) -> out[(int) i] = access.getLong(memory.base, pos));
        return out;
    }

    /** {@return every element as an int (the low 32 bits of {@link #getLong}), in row-major order} */
    public int[] toIntArray() {
        int[] out = new int[arrayLength(1)];
        if (dtype.equals(DataType.INT32) && isContiguous()) {
            return bulk(out, JAVA_INT_UNALIGNED);
        }
        readEach((i, pos) -> out[(int) i] = (int) access.getLong(memory.base, pos));
        return out;
    }

    /** {@return every element as a short (the low 16 bits of {@link #getLong}), in row-major order} */
    public short[] toShortArray() {
        short[] out = new short[arrayLength(1)];
        if (dtype.equals(DataType.INT16) && isContiguous()) {
            return bulk(out, JAVA_SHORT_UNALIGNED);
        }
        readEach((i, pos) -> out[(int) i] = (short) access.getLong(memory.base, pos));
        return out;
    }

    /** {@return every element as a char (the low 16 bits of {@link #getLong}, e.g. UINT16), in row-major order} */
    public char[] toCharArray() {
        char[] out = new char[arrayLength(1)];
        if (dtype.equals(DataType.UINT16) && isContiguous()) {
            return bulk(out, ValueLayout.JAVA_CHAR_UNALIGNED);
        }
        readEach((i, pos) -> out[(int) i] = (char) access.getLong(memory.base, pos));
        return out;
    }

    /** {@return every element as a byte (the low 8 bits of {@link #getLong}), in row-major order} */
    public byte[] toByteArray() {
        byte[] out = new byte[arrayLength(1)];
        if ((dtype.equals(DataType.INT8) || dtype.equals(DataType.UINT8)) && isContiguous()) {
            return bulk(out, JAVA_BYTE);
        }
        readEach((i, pos) -> out[(int) i] = (byte) access.getLong(memory.base, pos));
        return out;
    }

    /** {@return every element as a boolean (non-zero), in row-major order} */
    public boolean[] toBooleanArray() {
        boolean[] out = new boolean[arrayLength(1)];
        readEach((i, pos) -> out[(int) i] = access.getDouble(memory.base, pos) != 0 || access.getImag(memory.base, pos) != 0);
        return out;
    }

    private <A> A bulk(A out, ValueLayout layout) {
        if (numel == 0) {
            return out;
        }
        MemoryOwner m = enterRead();
        try {
            MemorySegment.copy(m.base, layout, offset, out, 0, (int) numel);
        } finally {
            m.exit();
        }
        return out;
    }

    private int arrayLength(int perElement) {
        if (numel > (Integer.MAX_VALUE - 8) / perElement) {
            throw new IllegalStateException(numel + " elements do not fit in a Java array");
        }
        if (!access.isSupported()) {
            throw new UnsupportedOperationException("elements of dtype " + dtype + " cannot be read as numbers");
        }
        return (int) numel * perElement;
    }

    // ---------------------------------------------------------------- views

    /**
     * The elements {@code start, start+step, ...} before {@code stop} of dimension {@code dim}, with
     * Python's rules: negative indices count from the end, bounds are clipped, a negative step walks
     * backwards ({@code slice(0, -1, Long.MIN_VALUE, -1)} is {@code a[::-1]}).
     *
     * @param dim   the dimension to slice; negative counts from the last
     * @param start the first index taken
     * @param stop  the index before which to stop (exclusive)
     * @param step  the distance between taken indices; not 0
     * @return a view sharing this tensor's memory
     */
    public Tensor slice(int dim, long start, long stop, long step) {
        return view(ViewGeometry.slice(offset, shape, strides, dtype, access.isPacked(), dim, start, stop, step), readOnly);
    }

    /**
     * The sub-tensor at {@code index} of dimension {@code dim}, which disappears (negative counts from the end).
     *
     * @param dim   the dimension to remove; negative counts from the last
     * @param index the position kept along {@code dim}
     * @return a view with one dimension fewer, sharing this tensor's memory
     * @throws IndexOutOfBoundsException if {@code index} is outside the dimension
     */
    public Tensor select(int dim, long index) {
        return view(ViewGeometry.select(offset, shape, strides, dtype, access.isPacked(), dim, index), readOnly);
    }

    /**
     * Dimension {@code dim} in reverse order (a negative stride).
     *
     * @param dim the dimension to reverse; negative counts from the last
     * @return a view sharing this tensor's memory
     */
    public Tensor flip(int dim) {
        return view(ViewGeometry.flip(offset, shape, strides, dtype, access.isPacked(), dim), readOnly);
    }

    /**
     * The dimensions in the order {@code dims} (a permutation of {@code 0..ndim-1}).
     *
     * @param dims for each dimension of the result, the dimension of this tensor it takes
     * @return a view sharing this tensor's memory
     * @throws IllegalArgumentException if {@code dims} is not a permutation
     */
    public Tensor permute(int... dims) {
        return view(ViewGeometry.permute(offset, shape, strides, dims), readOnly);
    }

    /** {@return a view with all dimensions reversed, as NumPy's {@code a.T}} */
    public Tensor transpose() {
        return view(ViewGeometry.transpose(offset, shape, strides), readOnly);
    }

    /**
     * Dimensions {@code a} and {@code b} swapped.
     *
     * @param a one dimension; negative counts from the last
     * @param b the other dimension; negative counts from the last
     * @return a view sharing this tensor's memory
     */
    public Tensor transpose(int a, int b) {
        return view(ViewGeometry.transpose(offset, shape, strides, a, b), readOnly);
    }

    /**
     * The same elements in a new shape, in row-major order, without copying; one extent may be -1
     * to be inferred.
     *
     * @param newShape the extent of each dimension of the result
     * @return a view sharing this tensor's memory
     * @throws IllegalArgumentException if the element count differs, or the strides cannot express
     *                                  the new shape (then {@code copy().reshape(...)} works)
     */
    public Tensor reshape(long... newShape) {
        return view(ViewGeometry.reshape(offset, shape, strides, access.isPacked(), newShape), readOnly);
    }

    /**
     * This tensor repeated along new or extent-1 dimensions by zero strides, as NumPy's
     * {@code broadcast_to}. The result is read-only, since its elements alias each other.
     *
     * @param newShape the extent of each dimension of the result; this tensor's shape aligned to its end
     * @return a read-only view sharing this tensor's memory
     * @throws IllegalArgumentException if the shapes are not compatible
     */
    public Tensor broadcastTo(long... newShape) {
        return view(ViewGeometry.broadcastTo(offset, shape, strides, newShape), true);
    }

    /** {@return a view that refuses writes} */
    public Tensor readOnly() {
        return view(new ViewGeometry.View(offset, shape.clone(), strides.clone()), true);
    }

    /**
     * A second owning handle to the same view of the same memory: the memory stays allocated until
     * this handle, the original owner and every export have let go, in any order. For containers
     * that must keep a tensor beyond its creator's {@link #close()} (the Python object that
     * {@code PythonDlpack.toPython} makes holds one). The caller closes it; a cleaner releases it if
     * it becomes unreachable first.
     *
     * @return a new owning tensor over the same memory
     * @throws IllegalStateException if the tensor is closed
     */
    public Tensor share() {
        checkOpen();
        memory.retain(); // throws if the memory was released meanwhile
        TensorHandle h;
        try {
            h = TensorHandle.holding(memory);
        } catch (RuntimeException | Error e) {
            memory.release();
            throw e;
        }
        return new Tensor(memory, h, true, offset, shape, strides, dtype, device, readOnly, paddedSubByte);
    }

    /** {@return a new owning, compact, writable copy of the elements (the caller closes it)} */
    public Tensor copy() {
        MemoryOwner m = enterRead();
        Tensor out;
        try {
            out = allocate(dtype, shape);
        } catch (RuntimeException | Error e) {
            m.exit();
            throw e;
        }
        try {
            if (numel == 0) {
                return out;
            }
            if (paddedSubByte) {
                forEachPosition((i, pos) -> out.access.setBits(out.memory.base, i * dtype.bits(),
                        access.getBits(m.base, pos)));
            } else if (isContiguous()) {
                MemorySegment.copy(m.base, offset, out.memory.base, 0, dtype.storageBytes(numel, false));
            } else {
                int size = dtype.byteSize();
                forEachPosition((i, pos) -> MemorySegment.copy(m.base, pos, out.memory.base, i * size, size));
            }
        } catch (RuntimeException e) {
            out.close();
            throw e;
        } finally {
            m.exit();
        }
        return out;
    }

    /** A view of this tensor's memory with geometry {@code g} (from {@link ViewGeometry}). */
    private Tensor view(ViewGeometry.View g, boolean ro) {
        if (access.isPacked() && !Shapes.isRowMajor(g.shape(), g.strides())) {
            throw new UnsupportedOperationException("packed " + dtype + " tensors have no strided views; "
                    + "only reshape keeps them compact");
        }
        checkOpen();
        return new Tensor(memory, handle, false, g.offset(), g.shape(), g.strides(), dtype, device, ro, paddedSubByte);
    }

    // ---------------------------------------------------------------- lifetime

    /**
     * Closes an owning tensor: it and its views become unusable, and its memory is freed once every
     * export of it has been deleted. Idempotent; does nothing on a view.
     */
    @Override
    public void close() {
        if (owning && handle.close()) {
            exportPools.close();
        }
        // This tensor (or its memory) is what the safety net watches: reachable until the release
        // above is done, so that it runs here and not on the cleaner thread.
        Reference.reachabilityFence(this);
    }

    /**
     * The pool for this owning tensor's exports in one ABI, or null for a view, or while it has been
     * exported only once that way (a tensor exported once never pays for a pool); see {@link ExportPools}.
     */
    ExportPool exportPool(boolean versioned) {
        ExportPools pools = exportPools;
        return pools == null ? null : pools.get(this, versioned);
    }

    MemoryOwner memory() {
        return memory;
    }

    TensorHandle handle() {
        return handle;
    }

    long offset() {
        return offset;
    }

    long[] shapeArray() {
        return shape;
    }

    long[] stridesArray() {
        return strides;
    }

    // ---------------------------------------------------------------- internals

    private void checkOpen() {
        if (handle.isClosed()) {
            throw new IllegalStateException("tensor is closed");
        }
    }

    private void checkHost() {
        if (!device.type().isHostAccessible()) {
            throw new UnsupportedOperationException("tensor lives on " + device
                    + ", which the CPU cannot address; copy it to the host first");
        }
    }

    private MemoryOwner enterRead() {
        checkOpen();
        checkHost();
        memory.enter();
        return memory;
    }

    private MemoryOwner enterWrite() {
        if (readOnly) {
            throw new UnsupportedOperationException("tensor is read-only");
        }
        return enterRead();
    }

    /** The position of the element at {@code index} ({@link ViewGeometry#position}); the hot path of element access. */
    private long position(long[] index) {
        if (!access.isSupported()) {
            ViewGeometry.checkRank(shape.length, index); // a wrong rank is told first
            throw new UnsupportedOperationException("elements of dtype " + dtype + " cannot be read or written as numbers");
        }
        return ViewGeometry.position(offset, shape, strides, dtype, access.isPacked(), index);
    }

    /** Visits every element in row-major order, holding the memory open meanwhile. */
    private void readEach(ViewGeometry.PositionVisitor v) {
        MemoryOwner m = enterRead();
        try {
            forEachPosition(v);
        } finally {
            m.exit();
        }
    }

    /** Visits every element in row-major order; the caller holds {@link MemoryOwner#enter()}. */
    private void forEachPosition(ViewGeometry.PositionVisitor v) {
        ViewGeometry.forEachPosition(offset, shape, strides, dtype, access.isPacked(), v);
    }

    /**
     * {@code Tensor(shape=[2, 3], dtype=float32, device=cpu:0)} followed by the elements the way
     * NumPy prints them, with {@code ...} in place of the middle of large tensors.
     */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("Tensor(shape=").append(Arrays.toString(shape))
                .append(", dtype=").append(dtype).append(", device=").append(device);
        if (readOnly) {
            sb.append(", read-only");
        }
        if (isClosed()) {
            return sb.append(", closed)").toString();
        }
        sb.append(')');
        if (!device.type().isHostAccessible() || !access.isSupported()) {
            return sb.toString();
        }
        try {
            MemoryOwner m = enterRead();
            try {
                sb.append('\n');
                TensorFormat.format(sb, this, m.base, access, numel > PREVIEW_THRESHOLD ? PREVIEW_EDGE : Long.MAX_VALUE);
            } finally {
                m.exit();
            }
        } catch (IllegalStateException closedMeanwhile) {
            sb.append(" (closed)");
        }
        return sb.toString();
    }

    long positionOf(long[] index) {
        return position(index);
    }

    ElementAccess access() {
        return access;
    }
}
