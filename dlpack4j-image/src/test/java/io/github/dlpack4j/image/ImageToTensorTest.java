package io.github.dlpack4j.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.image.Images.Layout;
import java.awt.Color;
import java.awt.Transparency;
import java.awt.color.ColorSpace;
import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.awt.image.ComponentColorModel;
import java.awt.image.DataBuffer;
import java.awt.image.IndexColorModel;
import java.awt.image.WritableRaster;
import java.util.stream.Stream;
import javax.imageio.ImageTypeSpecifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/** Images to tensors and back, value by value, for every raster layout and both channel orders. */
@ExtendWith(NoLeaks.class)
class ImageToTensorTest {
    static Stream<Arguments> layoutsAndOrders() {
        return Stream.of(Layout.values())
                .flatMap(l -> Stream.of(ChannelOrder.values()).map(o -> Arguments.of(l, o)));
    }

    @ParameterizedTest(name = "{0} in {1}")
    @MethodSource("layoutsAndOrders")
    void everyLayoutBecomesAUint8HwcTensorWithExactlyItsSamples(Layout layout, ChannelOrder order) {
        BufferedImage image = Images.of(layout);
        assertThat(ImageTensors.isZeroCopy(image, order)).as("a heap raster is copied").isFalse();
        try (Tensor t = ImageTensors.of(image, order)) {
            assertThat(t.dtype()).isEqualTo(DataType.UINT8);
            assertThat(t.shape()).containsExactly(Images.HEIGHT, Images.WIDTH, layout.channels);
            assertThat(t.isContiguous()).isTrue();
            assertThat(t.toByteArray()).containsExactly(Images.expected(layout, order));
        }
    }

    @ParameterizedTest(name = "{0} in {1}")
    @MethodSource("layoutsAndOrders")
    void aTensorBackAsAnImageShowsTheSamePixelsAsTheOriginal(Layout layout, ChannelOrder order) {
        BufferedImage original = Images.of(layout);
        try (Tensor t = ImageTensors.of(original, order)) {
            BufferedImage back = ImageTensors.toImage(t, order);
            assertThat(back.getWidth()).isEqualTo(Images.WIDTH);
            assertThat(back.getHeight()).isEqualTo(Images.HEIGHT);
            assertThat(back.getColorModel().hasAlpha()).isEqualTo(layout.channels == 4);
            WritableRaster a = original.getRaster();
            WritableRaster b = back.getRaster();
            assertThat(b.getNumBands()).isEqualTo(a.getNumBands());
            for (int y = 0; y < Images.HEIGHT; y++) {
                for (int x = 0; x < Images.WIDTH; x++) {
                    assertThat(b.getPixel(x, y, (int[]) null)).as("pixel (%d, %d)", x, y)
                            .containsExactly(a.getPixel(x, y, (int[]) null));
                    assertThat(back.getRGB(x, y)).isEqualTo(original.getRGB(x, y));
                }
            }
        }
    }

    @ParameterizedTest(name = "{0} in {1}")
    @MethodSource("layoutsAndOrders")
    void anImageFromToImageBecomesATensorAgainWithoutACopy(Layout layout, ChannelOrder order) {
        try (Tensor t = ImageTensors.of(Images.of(layout), order)) {
            BufferedImage image = ImageTensors.toImage(t, order);
            assertThat(ImageTensors.isZeroCopy(image, order)).isTrue();
            try (Tensor again = ImageTensors.of(image, order)) {
                assertThat(again.dataPointer()).isEqualTo(t.dataPointer());
                assertThat(again.shape()).containsExactly(t.shape());
                again.setLong(7, 1, 2, 0);
                assertThat(t.getLong(1, 2, 0)).as("one memory").isEqualTo(7);
            }
        }
    }

    @Test
    void writesToTheImageAreWritesToTheTensor() {
        try (Tensor t = Tensor.zeros(DataType.UINT8, 2, 3, 3)) {
            BufferedImage image = ImageTensors.toImage(t);
            image.setRGB(2, 1, 0x102030);
            assertThat(new long[] {t.getLong(1, 2, 0), t.getLong(1, 2, 1), t.getLong(1, 2, 2)})
                    .containsExactly(0x10, 0x20, 0x30);
            Graphics2D g = image.createGraphics();
            g.setColor(new Color(200, 100, 50));
            g.fillRect(0, 0, 1, 1);
            g.dispose();
            assertThat(new long[] {t.getLong(0, 0, 0), t.getLong(0, 0, 1), t.getLong(0, 0, 2)})
                    .containsExactly(200, 100, 50);
        }
    }

    @Test
    void anImageInTheOtherOrderIsCopiedWithItsChannelsSwapped() {
        try (Tensor rgb = Images.uint8(new byte[] {1, 2, 3, 4, 5, 6}, 1, 2, 3)) {
            BufferedImage image = ImageTensors.toImage(rgb);
            assertThat(ImageTensors.isZeroCopy(image, ChannelOrder.BGR)).isFalse();
            try (Tensor bgr = ImageTensors.of(image, ChannelOrder.BGR)) {
                assertThat(bgr.toByteArray()).containsExactly(3, 2, 1, 6, 5, 4);
                assertThat(bgr.dataPointer()).isNotEqualTo(rgb.dataPointer());
            }
        }
    }

    @Test
    void aSubimageOfANativeImageIsAViewOfItsPixels() {
        try (Tensor t = ImageTensors.of(Images.of(Layout.THREE_BYTE_BGR))) {
            BufferedImage part = ImageTensors.toImage(t).getSubimage(2, 1, 3, 2);
            assertThat(ImageTensors.isZeroCopy(part, ChannelOrder.RGB)).isTrue();
            try (Tensor view = ImageTensors.of(part)) {
                assertThat(view.shape()).containsExactly(2, 3, 3);
                assertThat(view.dataPointer()).isEqualTo(t.dataPointer() + (1L * Images.WIDTH + 2) * 3);
                for (int c = 0; c < 3; c++) {
                    assertThat(view.getLong(1, 2, c)).isEqualTo(Images.sample(c, 4, 2));
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(ChannelOrder.class)
    void aSubimageOfAHeapImageIsCopiedFromItsOwnCorner(ChannelOrder order) {
        for (Layout layout : Layout.values()) {
            BufferedImage part = Images.of(layout).getSubimage(2, 1, 3, 2);
            try (Tensor t = ImageTensors.of(part, order)) {
                assertThat(t.shape()).containsExactly(2, 3, layout.channels);
                try (Tensor whole = ImageTensors.of(Images.of(layout), order)) {
                    assertThat(t.toByteArray()).as("%s", layout).containsExactly(
                            whole.slice(0, 1, 3, 1).slice(1, 2, 5, 1).toByteArray());
                }
            }
        }
    }

    @Test
    void grayWithAlphaBecomesRgbaWithTheGrayInEachColour() {
        // What ImageIO gives for a gray-and-alpha PNG: 8-bit gray and alpha, interleaved.
        BufferedImage ga = ImageTypeSpecifier.createInterleaved(ColorSpace.getInstance(ColorSpace.CS_GRAY),
                new int[] {0, 1}, DataBuffer.TYPE_BYTE, true, false).createBufferedImage(2, 1);
        ga.getRaster().setPixel(0, 0, new int[] {10, 200});
        ga.getRaster().setPixel(1, 0, new int[] {77, 5});
        try (Tensor t = ImageTensors.of(ga)) {
            assertThat(t.shape()).containsExactly(1, 2, 4);
            assertThat(t.toByteArray()).containsExactly(10, 10, 10, (byte) 200, 77, 77, 77, 5);
        }
    }

    @Test
    void anIndexedImageBecomesItsPaletteColours() {
        byte[] r = {(byte) 255, 0, 9};
        byte[] g = {0, (byte) 255, 8};
        byte[] b = {0, 0, 7};
        BufferedImage indexed = new BufferedImage(3, 1, BufferedImage.TYPE_BYTE_INDEXED,
                new IndexColorModel(2, 3, r, g, b));
        indexed.getRaster().setPixels(0, 0, 3, 1, new int[] {2, 0, 1});
        try (Tensor t = ImageTensors.of(indexed)) {
            assertThat(t.shape()).containsExactly(1, 3, 3);
            assertThat(t.toByteArray()).containsExactly(9, 8, 7, (byte) 255, 0, 0, 0, (byte) 255, 0);
        }
    }

    @Test
    void premultipliedAlphaComesOutStraight() {
        BufferedImage pre = new BufferedImage(1, 1, BufferedImage.TYPE_INT_ARGB_PRE);
        pre.setRGB(0, 0, 0x80ff0000); // half-transparent red, stored as 0x80800000
        try (Tensor t = ImageTensors.of(pre)) {
            assertThat(t.toByteArray()).containsExactly((byte) 255, 0, 0, (byte) 0x80);
        }
    }

    /** The bytes {@code getRGB} gives for each pixel of {@code image}: red for one channel, R, G, B (and A) for more. */
    private static byte[] getRgbBytes(BufferedImage image, int channels) {
        byte[] out = new byte[image.getWidth() * image.getHeight() * channels];
        int i = 0;
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                int argb = image.getRGB(x, y);
                for (int c = 0; c < channels; c++) {
                    out[i++] = (byte) (argb >>> (c == 3 ? 24 : 16 - 8 * c));
                }
            }
        }
        return out;
    }

    @Test
    void componentSamplesOfFewerThanEightBitsAreScaledAsGetRgbScalesThem() {
        ComponentColorModel gray4 = new ComponentColorModel(ColorSpace.getInstance(ColorSpace.CS_GRAY), new int[] {4},
                false, false, Transparency.OPAQUE, DataBuffer.TYPE_BYTE);
        BufferedImage gray = new BufferedImage(gray4, gray4.createCompatibleWritableRaster(2, 1), false, null);
        gray.getRaster().setPixels(0, 0, 2, 1, new int[] {15, 8});
        ComponentColorModel rgb4 = new ComponentColorModel(ColorSpace.getInstance(ColorSpace.CS_sRGB), new int[] {4, 4, 4},
                false, false, Transparency.OPAQUE, DataBuffer.TYPE_BYTE);
        BufferedImage rgb = new BufferedImage(rgb4, rgb4.createCompatibleWritableRaster(2, 1), false, null);
        rgb.getRaster().setPixels(0, 0, 2, 1, new int[] {15, 0, 8, 1, 2, 3});
        try (Tensor g = ImageTensors.of(gray); Tensor c = ImageTensors.of(rgb, ChannelOrder.RGB)) {
            assertThat(g.shape()).containsExactly(1, 2, 1);
            assertThat(g.getLong(0, 0, 0)).as("4-bit 15 is white").isEqualTo(255);
            assertThat(g.toByteArray()).containsExactly(getRgbBytes(gray, 1));
            assertThat(c.toByteArray()).containsExactly(getRgbBytes(rgb, 3));
            assertThat(c.getLong(0, 0, 0)).isEqualTo(255);
        }
    }

    @Test
    void anImageOverATensorInAnotherColourSpaceOrWithNarrowSamplesIsConvertedNotShared() {
        byte[] samples = {10, (byte) 128, (byte) 250, 0, 64, (byte) 192};
        try (Tensor t = Images.uint8(samples, 1, 2, 3); Tensor g = Images.uint8(new byte[] {15, 8}, 1, 2, 1)) {
            ComponentColorModel linear = new ComponentColorModel(ColorSpace.getInstance(ColorSpace.CS_LINEAR_RGB),
                    false, false, Transparency.OPAQUE, DataBuffer.TYPE_BYTE);
            BufferedImage linearRgb = new BufferedImage(linear, ImageTensors.toImage(t).getRaster(), false, null);
            ComponentColorModel gray4 = new ComponentColorModel(ColorSpace.getInstance(ColorSpace.CS_GRAY),
                    new int[] {4}, false, false, Transparency.OPAQUE, DataBuffer.TYPE_BYTE);
            BufferedImage narrow = new BufferedImage(gray4, ImageTensors.toImage(g).getRaster(), false, null);
            assertThat(ImageTensors.isZeroCopy(linearRgb, ChannelOrder.RGB)).as("linear RGB").isFalse();
            assertThat(ImageTensors.isZeroCopy(narrow, ChannelOrder.RGB)).as("4-bit gray").isFalse();
            try (Tensor a = ImageTensors.of(linearRgb); Tensor b = ImageTensors.of(narrow)) {
                assertThat(a.dataPointer()).isNotEqualTo(t.dataPointer());
                assertThat(a.toByteArray()).as("linear RGB as sRGB").containsExactly(getRgbBytes(linearRgb, 3));
                assertThat(b.toByteArray()).as("4-bit gray scaled").containsExactly(getRgbBytes(narrow, 1));
            }
        }
    }

    @Test
    void sixteenBitSamplesAreRefusedWithWhatToDoInstead() {
        BufferedImage wide = new BufferedImage(2, 2, BufferedImage.TYPE_USHORT_GRAY);
        assertThatThrownBy(() -> ImageTensors.of(wide))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("16-bit samples")
                .hasMessageContaining("getPixels")
                .hasMessageContaining("TYPE_BYTE_GRAY");
    }
}
