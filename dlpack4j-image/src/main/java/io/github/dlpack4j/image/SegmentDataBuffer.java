package io.github.dlpack4j.image;

import io.github.dlpack4j.Tensor;
import java.awt.image.DataBuffer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A {@link DataBuffer} of bytes over a tensor's native memory: what lets a {@code BufferedImage}
 * and a tensor share their pixels. It holds its own owning handle to the memory (a
 * {@link Tensor#share()}), so the memory lives as long as this buffer is reachable, whoever closed
 * the tensor it came from; once the buffer is collected the handle's cleaner lets go of it.
 */
final class SegmentDataBuffer extends DataBuffer {
    /** The compact uint8 {@code [height, width, channels]} tensor the pixels are, owned by this buffer. */
    private final Tensor pixels;
    /** {@code pixels.data()}, kept for the element accessors (the tensor field keeps it valid). */
    private final MemorySegment bytes;

    /** Over {@code pixels}, which the caller hands over: it is closed by the buffer's cleaner, never by the caller. */
    SegmentDataBuffer(Tensor pixels) {
        super(TYPE_BYTE, Math.toIntExact(pixels.numel()));
        this.pixels = pixels;
        this.bytes = pixels.data();
    }

    /** {@return a new owning handle to the pixels this buffer holds; the caller closes it} */
    Tensor sharePixels() {
        return pixels.share();
    }

    /** {@return the shape of the pixels this buffer holds: height, width, channels} */
    long[] shape() {
        return pixels.shape();
    }

    @Override
    public int getElem(int bank, int i) {
        return Byte.toUnsignedInt(bytes.getAtIndex(ValueLayout.JAVA_BYTE, i));
    }

    @Override
    public void setElem(int bank, int i, int val) {
        bytes.setAtIndex(ValueLayout.JAVA_BYTE, i, (byte) val);
    }
}
