package io.github.dlpack4j.spark;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;

/**
 * The native memory of the batches' tensors (the row route's packed inputs, the Parquet route's
 * outputs of a read), kept for the next batch of the same size instead of allocated and zeroed for
 * each one (a batch of 1024 rows of 256 floats is 1 MiB). A block goes
 * back only when the tensor over it is released: its owner closed it <em>and</em> every DLPack
 * consumer (torch, say) deleted its export. So a model that keeps its input never sees it
 * overwritten: the next batch then gets a fresh block.
 *
 * <p>Blocks come from automatic arenas: a block dropped from the pool is freed by the garbage
 * collector once nothing reaches it, and no arena is ever closed here (closing a shared arena costs
 * a handshake with every thread of the JVM, and an executor has many).
 */
final class NativeBlocks {
    /** Blocks kept per size: a task uses one or two at a time, an executor as many as its task threads. */
    private static final int KEPT_PER_SIZE = 16;
    private static final Map<Long, Pool> POOLS = new ConcurrentHashMap<>();

    private NativeBlocks() {
    }

    /** {@return a block of at least {@code bytes} bytes, 64-byte aligned; its contents are undefined} */
    static MemorySegment acquire(long bytes) {
        Pool p = pool(bytes);
        MemorySegment block = p.free.poll();
        if (block == null) {
            return Arena.ofAuto().allocate(Math.max(bytes, 1), 64);
        }
        p.kept.decrementAndGet();
        return block;
    }

    /** Gives {@code block} (from {@link #acquire}) back for reuse; any thread, once. */
    static void release(MemorySegment block) {
        Pool p = pool(block.byteSize());
        if (p.kept.incrementAndGet() <= KEPT_PER_SIZE) {
            p.free.offer(block);
        } else {
            p.kept.decrementAndGet();
        }
    }

    /**
     * {@return a compact row-major tensor of {@code shape} over {@code block} (from
     * {@link #acquire}), which gives the block back when the tensor's memory is released: its
     * owner closed it and every export and vector over it let go}
     */
    static Tensor tensor(MemorySegment block, DataType dtype, long[] shape) {
        long[] strides = new long[shape.length];
        long stride = 1;
        for (int d = shape.length - 1; d >= 0; d--) {
            strides[d] = stride;
            stride *= shape[d];
        }
        return Tensor.wrap(block, 0, dtype, shape, strides, () -> release(block));
    }

    private static Pool pool(long bytes) {
        return POOLS.computeIfAbsent(Math.max(bytes, 1), b -> new Pool());
    }

    private static final class Pool {
        final Queue<MemorySegment> free = new ConcurrentLinkedQueue<>();
        /** Blocks in {@link #free}, bounded by {@link #KEPT_PER_SIZE}. */
        final AtomicInteger kept = new AtomicInteger();
    }
}
