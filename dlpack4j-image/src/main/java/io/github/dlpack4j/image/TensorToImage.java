package io.github.dlpack4j.image;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.DeviceType;
import io.github.dlpack4j.Tensor;
import java.awt.Transparency;
import java.awt.color.ColorSpace;
import java.awt.image.BufferedImage;
import java.awt.image.ColorModel;
import java.awt.image.ComponentColorModel;
import java.awt.image.DataBuffer;
import java.awt.image.PixelInterleavedSampleModel;
import java.awt.image.Raster;
import java.awt.image.WritableRaster;
import java.util.Arrays;

/** A uint8 {@code [height, width, channels]} tensor as a {@code BufferedImage} over its memory. */
final class TensorToImage {
    private TensorToImage() {}

    static BufferedImage toImage(Tensor t, ChannelOrder order) {
        long[] shape = check(t);
        int height = (int) shape[0];
        int width = (int) shape[1];
        int channels = (int) shape[2];
        // The buffer takes a handle of its own: the image keeps the memory after t is closed.
        DataBuffer buffer = new SegmentDataBuffer(t.share());
        PixelInterleavedSampleModel layout = new PixelInterleavedSampleModel(DataBuffer.TYPE_BYTE, width, height,
                channels, width * channels, order.byteOffsets(channels));
        WritableRaster raster = Raster.createWritableRaster(layout, buffer, null);
        return new BufferedImage(colorModel(channels), raster, false, null);
    }

    /** The colour model of an image with these 8-bit channels: gray, sRGB, or sRGB with alpha. */
    static ColorModel colorModel(int channels) {
        boolean alpha = channels == 4;
        ColorSpace space = ColorSpace.getInstance(channels == 1 ? ColorSpace.CS_GRAY : ColorSpace.CS_sRGB);
        int[] bits = new int[channels];
        Arrays.fill(bits, 8);
        return new ComponentColorModel(space, bits, alpha, false, alpha ? Transparency.TRANSLUCENT : Transparency.OPAQUE,
                DataBuffer.TYPE_BYTE);
    }

    /** {@return the tensor's shape, once every rule an image's pixels follow is checked} */
    private static long[] check(Tensor t) {
        long[] shape = t.shape();
        if (!t.dtype().equals(DataType.UINT8)) {
            throw new IllegalArgumentException("an image tensor holds uint8 samples, this one " + t.dtype()
                    + "; convert it first (torch: (x.clamp(0, 1) * 255).round().to(torch.uint8))");
        }
        if (shape.length != 3) {
            throw new IllegalArgumentException("an image tensor is [height, width, channels], this one has shape "
                    + Arrays.toString(shape) + "; a CHW tensor goes through permute(1, 2, 0).copy(), a gray [h, w] one "
                    + "through reshape(h, w, 1)");
        }
        if (shape[2] != 1 && shape[2] != 3 && shape[2] != 4) {
            throw new IllegalArgumentException("an image has 1 (gray), 3 (RGB) or 4 (RGBA) channels, this tensor "
                    + shape[2] + " (shape " + Arrays.toString(shape) + ")");
        }
        if (t.device().type() != DeviceType.CPU) {
            throw new IllegalArgumentException("the tensor is on " + t.device() + "; copy it to the CPU first "
                    + "(torch: .cpu())");
        }
        if (!t.isContiguous()) {
            throw new IllegalArgumentException("an image's pixels are compact rows, this tensor has strides "
                    + Arrays.toString(t.strides()) + " for shape " + Arrays.toString(shape) + "; pass tensor.copy(), "
                    + "a compact copy");
        }
        if (t.isReadOnly()) {
            throw new IllegalArgumentException("the tensor is read-only and a BufferedImage is writable; "
                    + "pass tensor.copy()");
        }
        if (shape[0] == 0 || shape[1] == 0 || t.numel() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a BufferedImage has 1 to 2^31 - 1 samples, this tensor "
                    + t.numel() + " (shape " + Arrays.toString(shape) + ")");
        }
        return shape;
    }
}
