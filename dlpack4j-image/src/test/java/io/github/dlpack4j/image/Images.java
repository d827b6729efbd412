package io.github.dlpack4j.image;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import java.awt.image.BufferedImage;
import java.awt.image.WritableRaster;
import java.lang.foreign.MemorySegment;

/**
 * Test images with known pixels: every sample a function of its position, so that a tensor's bytes
 * can be checked one by one against what they must be.
 */
final class Images {
    static final int WIDTH = 7;  // odd, so that rows are not multiples of anything
    static final int HEIGHT = 5;

    /** The five layouts ImageIO gives for PNG and JPEG files. */
    enum Layout {
        THREE_BYTE_BGR(BufferedImage.TYPE_3BYTE_BGR, 3),
        FOUR_BYTE_ABGR(BufferedImage.TYPE_4BYTE_ABGR, 4),
        BYTE_GRAY(BufferedImage.TYPE_BYTE_GRAY, 1),
        INT_RGB(BufferedImage.TYPE_INT_RGB, 3),
        INT_ARGB(BufferedImage.TYPE_INT_ARGB, 4);

        final int type;
        final int channels;

        Layout(int type, int channels) {
            this.type = type;
            this.channels = channels;
        }
    }

    private Images() {}

    static int red(int x, int y) {
        return (x * 37 + y * 11) & 0xff;
    }

    static int green(int x, int y) {
        return (x * 5 + y * 53 + 100) & 0xff;
    }

    static int blue(int x, int y) {
        return (255 - x * 29 - y * 3) & 0xff;
    }

    static int alpha(int x, int y) {
        return (x * 41 + y * 17 + 1) & 0xff;
    }

    /** Sample {@code s} (0 red, 1 green, 2 blue, 3 alpha) of pixel (x, y); gray is {@link #red}. */
    static int sample(int s, int x, int y) {
        return switch (s) {
            case 0 -> red(x, y);
            case 1 -> green(x, y);
            case 2 -> blue(x, y);
            default -> alpha(x, y);
        };
    }

    /** An image of {@code layout} with the pixels above, its raw samples set one by one (no colour conversion). */
    static BufferedImage of(Layout layout) {
        return of(layout, WIDTH, HEIGHT);
    }

    static BufferedImage of(Layout layout, int width, int height) {
        BufferedImage image = new BufferedImage(width, height, layout.type);
        WritableRaster raster = image.getRaster();
        for (int y = 0; y < height; y++) {
            for (int x = 0; x < width; x++) {
                for (int band = 0; band < raster.getNumBands(); band++) {
                    raster.setSample(x, y, band, sample(band, x, y)); // bands are R, G, B, A or gray
                }
            }
        }
        return image;
    }

    /** The bytes the tensor of such an image must hold, row-major, in {@code order}. */
    static byte[] expected(int channels, ChannelOrder order, int width, int height) {
        byte[] out = new byte[width * height * channels];
        int i = 0;
        for (int y = 0; y < height; y++) {
            for (int x = 0; x < width; x++) {
                for (int c = 0; c < channels; c++) {
                    int s = order == ChannelOrder.BGR && channels >= 3 && c < 3 ? 2 - c : c;
                    out[i++] = (byte) sample(s, x, y);
                }
            }
        }
        return out;
    }

    /** A new uint8 tensor of {@code shape} holding {@code values} (Tensor.of(byte[]) is int8). */
    static Tensor uint8(byte[] values, long... shape) {
        Tensor t = Tensor.zeros(DataType.UINT8, shape);
        t.data().copyFrom(MemorySegment.ofArray(values));
        return t;
    }

    static byte[] expected(Layout layout, ChannelOrder order) {
        return expected(layout.channels, order, WIDTH, HEIGHT);
    }
}
