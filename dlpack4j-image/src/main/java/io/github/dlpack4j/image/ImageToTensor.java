package io.github.dlpack4j.image;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import java.awt.color.ColorSpace;
import java.awt.image.BufferedImage;
import java.awt.image.ColorModel;
import java.awt.image.ComponentColorModel;
import java.awt.image.DataBuffer;
import java.awt.image.DirectColorModel;
import java.awt.image.PixelInterleavedSampleModel;
import java.awt.image.Raster;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * A {@code BufferedImage} as a uint8 {@code [height, width, channels]} tensor: a view of its pixels
 * when they are in native memory already ({@link TensorToImage}'s images), one copy otherwise.
 *
 * <p>The copy reads one row at a time through the raster's public accessors, so every raster
 * (a {@code getSubimage} child included) is read by its own sample model, and writes the row into
 * the tensor in one bulk copy. How a pixel's samples are found depends on the colour model:
 * <ul>
 *   <li>8-bit samples (every component 8 bits) of a {@link ComponentColorModel} in sRGB or gray
 *       ({@code TYPE_3BYTE_BGR}, {@code TYPE_4BYTE_ABGR}, {@code TYPE_BYTE_GRAY}, the interleaved RGB
 *       of PNG and JPEG readers): taken as they are; gray with alpha becomes RGBA, its gray in R, G and B;</li>
 *   <li>8-bit fields of a {@link DirectColorModel} ({@code TYPE_INT_RGB}, {@code TYPE_INT_ARGB},
 *       {@code TYPE_INT_BGR}): taken from the packed int by their masks;</li>
 *   <li>samples wider than 8 bits: refused, a uint8 tensor cannot hold them;</li>
 *   <li>everything else (indexed and 1-bit images, component samples of fewer than 8 bits,
 *       premultiplied alpha, 565 and 555 colours, CMYK or another colour space): converted to 8-bit
 *       sRGB by {@link BufferedImage#getRGB}, which scales narrow samples to 0-255.</li>
 * </ul>
 */
final class ImageToTensor {
    private static final int[] ARGB_SHIFTS = {16, 8, 0, 24}; // red, green, blue, alpha in getRGB's ints

    private ImageToTensor() {}

    static Tensor of(BufferedImage image, ChannelOrder order) {
        SegmentDataBuffer shared = sharedPixels(image, order);
        return shared != null ? view(image, shared) : copy(image, order);
    }

    static boolean isZeroCopy(BufferedImage image, ChannelOrder order) {
        return sharedPixels(image, order) != null;
    }

    /**
     * The native buffer whose pixels {@code image} shows in the tensor layout {@code order} asks
     * for, or null if the image has other memory or another layout (then it is copied). The image's
     * samples must be the tensor's bytes as they are ({@link #hasRawBytes}): an image over a tensor's
     * buffer with, say, a linear-RGB or a 4-bit colour model is converted, as its copy would be.
     */
    private static SegmentDataBuffer sharedPixels(BufferedImage image, ChannelOrder order) {
        Raster raster = image.getRaster();
        if (!(raster.getDataBuffer() instanceof SegmentDataBuffer buffer)
                || !(raster.getSampleModel() instanceof PixelInterleavedSampleModel layout)) {
            return null;
        }
        long[] shape = buffer.shape();
        int channels = (int) shape[2];
        ColorModel cm = image.getColorModel();
        boolean sameLayout = layout.getNumBands() == channels
                && layout.getPixelStride() == channels
                && layout.getScanlineStride() == shape[1] * channels
                && Arrays.equals(layout.getBandOffsets(), order.byteOffsets(channels))
                && hasRawBytes(cm)
                && cm.getNumComponents() == channels && cm.hasAlpha() == (channels == 4);
        return sameLayout ? buffer : null;
    }

    /** A new handle to the part of {@code buffer}'s pixels that {@code image} (perhaps a subimage) shows. */
    private static Tensor view(BufferedImage image, SegmentDataBuffer buffer) {
        Raster raster = image.getRaster();
        long x = -raster.getSampleModelTranslateX();
        long y = -raster.getSampleModelTranslateY();
        long[] shape = buffer.shape();
        if (x == 0 && y == 0 && image.getWidth() == shape[1] && image.getHeight() == shape[0]) {
            return buffer.sharePixels();
        }
        try (Tensor whole = buffer.sharePixels()) {
            return whole.slice(0, y, y + image.getHeight(), 1).slice(1, x, x + image.getWidth(), 1).share();
        }
    }

    /** {@return how many channels the tensor of {@code cm}'s pixels has: 1 for gray, 4 with alpha, else 3} */
    private static int channels(ColorModel cm) {
        refuseWideSamples(cm);
        if (cm instanceof ComponentColorModel && isGray(cm) && !cm.hasAlpha()) {
            return 1;
        }
        return cm.hasAlpha() ? 4 : 3;
    }

    /** Refuses samples that a uint8 tensor cannot hold without rounding. */
    static void refuseWideSamples(ColorModel cm) {
        if (cm instanceof ComponentColorModel && cm.getTransferType() != DataBuffer.TYPE_BYTE) {
            throw new IllegalArgumentException("the image has " + cm.getComponentSize(0) + "-bit samples and "
                    + "ImageTensors makes uint8 tensors; read them with image.getRaster().getPixels(...) into a "
                    + "UINT16 or FLOAT32 tensor, or draw the image into a TYPE_3BYTE_BGR or TYPE_BYTE_GRAY one first");
        }
    }

    /**
     * Whether the samples of {@code cm} are a tensor's bytes as they are: a {@link ComponentColorModel}
     * of 8-bit byte samples, not premultiplied, in sRGB or gray. Narrower samples (a 4-bit gray) are
     * not: getRGB scales them to 0-255, and so must the tensor.
     */
    static boolean hasRawBytes(ColorModel cm) {
        if (!(cm instanceof ComponentColorModel) || cm.isAlphaPremultiplied()
                || cm.getTransferType() != DataBuffer.TYPE_BYTE
                || !(cm.getColorSpace().isCS_sRGB() || isGray(cm))) {
            return false;
        }
        for (int i = 0; i < cm.getNumComponents(); i++) {
            if (cm.getComponentSize(i) != 8) {
                return false;
            }
        }
        return true;
    }

    private static boolean isGray(ColorModel cm) {
        return cm.getColorSpace().getType() == ColorSpace.TYPE_GRAY;
    }

    private static Tensor copy(BufferedImage image, ChannelOrder order) {
        ColorModel cm = image.getColorModel();
        int channels = channels(cm);
        int width = image.getWidth();
        int height = image.getHeight();
        Rows rows = rowsOf(image, cm, channels, order);
        Tensor t = Tensor.zeros(DataType.UINT8, height, width, channels);
        try {
            t.withData(pixels -> {
                byte[] row = new byte[width * channels];
                long rowBytes = row.length;
                for (int y = 0; y < height; y++) {
                    rows.read(y, row);
                    MemorySegment.copy(row, 0, pixels, ValueLayout.JAVA_BYTE, y * rowBytes, row.length);
                }
                return null;
            });
        } catch (RuntimeException | Error e) {
            t.close();
            throw e;
        }
        return t;
    }

    /** Fills {@code out} with row {@code y} of the image as the tensor's bytes: width times channels. */
    @FunctionalInterface
    private interface Rows {
        void read(int y, byte[] out);
    }

    private static Rows rowsOf(BufferedImage image, ColorModel cm, int channels, ChannelOrder order) {
        Raster raster = image.getRaster();
        int width = image.getWidth();
        if (hasRawBytes(cm)) {
            // getDataElements gives the samples in band order: R, G, B, A, or gray (and alpha).
            int bands = raster.getNumBands();
            int[] band = new int[channels];
            for (int c = 0; c < channels; c++) {
                int sample = order.sampleOf(c, channels);
                band[c] = bands == 2 ? (sample == 3 ? 1 : 0) : sample; // gray and alpha: gray as R, G, B
            }
            if (Arrays.equals(band, identity(channels)) && bands == channels) {
                return (y, out) -> raster.getDataElements(0, y, width, 1, out);
            }
            byte[] in = new byte[width * bands];
            return (y, out) -> pick((byte[]) raster.getDataElements(0, y, width, 1, in), bands, band, out);
        }
        int[] shifts = new int[channels];
        if (cm instanceof DirectColorModel d && !cm.isAlphaPremultiplied() && cm.getTransferType() == DataBuffer.TYPE_INT
                && cm.getColorSpace().isCS_sRGB() && hasByteFields(d)) {
            int[] masks = {d.getRedMask(), d.getGreenMask(), d.getBlueMask(), d.getAlphaMask()};
            for (int c = 0; c < channels; c++) {
                shifts[c] = Integer.numberOfTrailingZeros(masks[order.sampleOf(c, channels)]);
            }
            int[] in = new int[width];
            return (y, out) -> unpack((int[]) raster.getDataElements(0, y, width, 1, in), shifts, out);
        }
        for (int c = 0; c < channels; c++) {
            shifts[c] = ARGB_SHIFTS[order.sampleOf(c, channels)];
        }
        int[] in = new int[width];
        return (y, out) -> unpack(image.getRGB(0, y, width, 1, in, 0, width), shifts, out);
    }

    private static boolean hasByteFields(DirectColorModel d) {
        int[] masks = {d.getRedMask(), d.getGreenMask(), d.getBlueMask(), d.getAlphaMask()};
        for (int i = 0; i < (d.hasAlpha() ? 4 : 3); i++) {
            if (masks[i] != 0xff << Integer.numberOfTrailingZeros(masks[i])) {
                return false;
            }
        }
        return true;
    }

    /**
     * {@code out}'s channel c of each pixel is byte {@code band[c]} of the pixel's {@code bands} bytes in
     * {@code in}; 3 or 4 channels (one is always taken as it is).
     */
    private static void pick(byte[] in, int bands, int[] band, byte[] out) {
        int channels = band.length;
        if (channels == 3) { // the loops of 3 and 4 channels with the offsets in locals: 2-3x faster than the general one
            int b0 = band[0];
            int b1 = band[1];
            int b2 = band[2];
            for (int i = 0, o = 0; o < out.length; i += bands, o += 3) {
                out[o] = in[i + b0];
                out[o + 1] = in[i + b1];
                out[o + 2] = in[i + b2];
            }
        } else {
            int b0 = band[0];
            int b1 = band[1];
            int b2 = band[2];
            int b3 = band[3];
            for (int i = 0, o = 0; o < out.length; i += bands, o += 4) {
                out[o] = in[i + b0];
                out[o + 1] = in[i + b1];
                out[o + 2] = in[i + b2];
                out[o + 3] = in[i + b3];
            }
        }
    }

    /**
     * {@code out}'s channel c of each pixel is the byte at bit {@code shifts[c]} of the pixel's int; 1, 3
     * or 4 channels (1: a gray of fewer than 8 bits, getRGB's red).
     */
    private static void unpack(int[] pixels, int[] shifts, byte[] out) {
        int channels = shifts.length;
        if (channels == 1) {
            int s0 = shifts[0];
            for (int x = 0; x < out.length; x++) {
                out[x] = (byte) (pixels[x] >>> s0);
            }
        } else if (channels == 3) { // as in pick
            int s0 = shifts[0];
            int s1 = shifts[1];
            int s2 = shifts[2];
            for (int x = 0, o = 0; o < out.length; x++, o += 3) {
                int p = pixels[x];
                out[o] = (byte) (p >>> s0);
                out[o + 1] = (byte) (p >>> s1);
                out[o + 2] = (byte) (p >>> s2);
            }
        } else {
            int s0 = shifts[0];
            int s1 = shifts[1];
            int s2 = shifts[2];
            int s3 = shifts[3];
            for (int x = 0, o = 0; o < out.length; x++, o += 4) {
                int p = pixels[x];
                out[o] = (byte) (p >>> s0);
                out[o + 1] = (byte) (p >>> s1);
                out[o + 2] = (byte) (p >>> s2);
                out[o + 3] = (byte) (p >>> s3);
            }
        }
    }

    private static int[] identity(int n) {
        int[] a = new int[n];
        Arrays.setAll(a, i -> i);
        return a;
    }
}
