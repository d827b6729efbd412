package io.github.dlpack4j.image;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.image.Images.Layout;
import java.awt.image.BufferedImage;
import java.awt.image.IndexColorModel;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import javax.imageio.spi.IIORegistry;
import javax.imageio.spi.ImageReaderSpi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Files that ImageIO wrote, decoded by {@code read} into tensors with exactly ImageIO's pixels: PNG and
 * JPEG value by value, and every format this JDK's ImageIO reads against {@code of(ImageIO.read(file))}.
 */
@ExtendWith(NoLeaks.class)
class ImageFilesTest {
    @TempDir
    Path dir;

    static Stream<Arguments> layoutsAndOrders() {
        return ImageToTensorTest.layoutsAndOrders();
    }

    /** JPEG holds no alpha: the layouts ImageIO's JPEG writer takes. */
    static Stream<Arguments> opaqueLayoutsAndOrders() {
        return layoutsAndOrders().filter(a -> ((Layout) a.get()[0]).channels != 4);
    }

    @ParameterizedTest(name = "{0} in {1}")
    @MethodSource("layoutsAndOrders")
    void aPngReadsBackAsExactlyThePixelsWritten(Layout layout, ChannelOrder order) throws IOException {
        Path file = write(Images.of(layout, 33, 17), "png");
        try (Tensor t = ImageTensors.read(file, order)) {
            assertThat(t.dtype()).isEqualTo(DataType.UINT8);
            assertThat(t.shape()).containsExactly(17, 33, layout.channels);
            assertThat(t.toByteArray()).containsExactly(Images.expected(layout.channels, order, 33, 17));
        }
    }

    @ParameterizedTest(name = "{0} in {1}")
    @MethodSource("opaqueLayoutsAndOrders")
    void aJpegReadsAsExactlyWhatImageIoDecodes(Layout layout, ChannelOrder order) throws IOException {
        Path file = write(Images.of(layout, 61, 29), "jpg");
        BufferedImage decoded = ImageIO.read(file.toFile());
        try (Tensor t = ImageTensors.read(file, order);
             Tensor expected = ImageTensors.of(decoded, order)) {
            assertThat(t.shape()).containsExactly(29, 61, layout.channels);
            assertThat(t.toByteArray()).containsExactly(expected.toByteArray());
        }
    }

    @Test
    void theDefaultOrderIsRgb() throws IOException {
        Path file = write(Images.of(Layout.THREE_BYTE_BGR), "png");
        try (Tensor t = ImageTensors.read(file)) {
            assertThat(t.toByteArray()).containsExactly(Images.expected(Layout.THREE_BYTE_BGR, ChannelOrder.RGB));
        }
    }

    @Test
    void anIndexedPngReadsAsItsPaletteColours() throws IOException {
        byte[] r = {(byte) 255, 0, 9, 1};
        byte[] g = {0, (byte) 255, 8, 2};
        byte[] b = {0, 0, 7, 3};
        BufferedImage indexed = new BufferedImage(4, 2, BufferedImage.TYPE_BYTE_BINARY, new IndexColorModel(2, 4, r, g, b));
        indexed.getRaster().setPixels(0, 0, 4, 2, new int[] {0, 1, 2, 3, 3, 2, 1, 0});
        Path file = write(indexed, "png");
        try (Tensor t = ImageTensors.read(file)) {
            assertThat(t.shape()).containsExactly(2, 4, 3);
            assertThat(t.getLong(0, 2, 0)).isEqualTo(9);
            assertThat(t.getLong(1, 0, 2)).isEqualTo(3);
            try (Tensor viaImageIo = ImageTensors.of(ImageIO.read(file.toFile()))) {
                assertThat(t.toByteArray()).containsExactly(viaImageIo.toByteArray());
            }
        }
    }

    @Test
    void aLargeJpegReadsAsImageIoDecodesIt() throws IOException {
        Path file = write(Images.of(Layout.INT_RGB, 640, 480), "jpg");
        try (Tensor t = ImageTensors.read(file);
             Tensor expected = ImageTensors.of(ImageIO.read(file.toFile()))) {
            assertThat(t.toByteArray()).containsExactly(expected.toByteArray());
        }
    }

    @ParameterizedTest
    @EnumSource(ChannelOrder.class)
    void aBmpKeepsItsRedAndBlueInEitherOrder(ChannelOrder order) throws IOException {
        BufferedImage redThenBlue = new BufferedImage(2, 1, BufferedImage.TYPE_3BYTE_BGR);
        redThenBlue.setRGB(0, 0, 0xff0000);
        redThenBlue.setRGB(1, 0, 0x0000ff);
        Path file = write(redThenBlue, "bmp");
        try (Tensor t = ImageTensors.read(file, order)) {
            byte ff = (byte) 255;
            assertThat(t.toByteArray()).containsExactly(order == ChannelOrder.RGB
                    ? new byte[] {ff, 0, 0, 0, 0, ff}
                    : new byte[] {0, 0, ff, ff, 0, 0});
        }
    }

    /** The source images for {@link #everyFormatImageIoReadsGivesImageIoPixels}: the writers take those they can encode. */
    private static Map<String, BufferedImage> sources() {
        Map<String, BufferedImage> images = new LinkedHashMap<>();
        for (Layout layout : Layout.values()) {
            images.put(layout.name(), Images.of(layout, 13, 7)); // 13 * 3 bytes: rows a BMP pads
        }
        BufferedImage binary = new BufferedImage(13, 7, BufferedImage.TYPE_BYTE_BINARY);
        BufferedImage indexed = new BufferedImage(13, 7, BufferedImage.TYPE_BYTE_INDEXED);
        for (int y = 0; y < 7; y++) {
            for (int x = 0; x < 13; x++) {
                binary.getRaster().setSample(x, y, 0, (x + y) & 1);
                indexed.setRGB(x, y, Images.red(x, y) << 16 | Images.green(x, y) << 8 | Images.blue(x, y));
            }
        }
        images.put("BYTE_BINARY", binary);
        images.put("BYTE_INDEXED", indexed);
        return images;
    }

    /** One format name of each image reader registered with ImageIO: bmp, gif, jpeg, png, tiff, wbmp in the JDK. */
    static Stream<String> readerFormats() {
        Set<String> formats = new LinkedHashSet<>();
        IIORegistry.getDefaultInstance().getServiceProviders(ImageReaderSpi.class, false)
                .forEachRemaining(spi -> formats.add(spi.getFormatNames()[0].toLowerCase(Locale.ROOT)));
        return formats.stream().sorted();
    }

    @ParameterizedTest
    @MethodSource("readerFormats")
    void everyFormatImageIoReadsGivesImageIoPixels(String format) throws IOException {
        List<String> written = new ArrayList<>();
        for (Map.Entry<String, BufferedImage> source : sources().entrySet()) {
            Path file = dir.resolve(source.getKey() + "." + format);
            if (!ImageIO.write(source.getValue(), format, file.toFile())) {
                continue; // a layout this format's writer cannot encode (alpha in BMP, colour in WBMP)
            }
            written.add(source.getKey());
            for (ChannelOrder order : ChannelOrder.values()) {
                BufferedImage decoded = ImageIO.read(file.toFile());
                try (Tensor t = ImageTensors.read(file, order);
                     Tensor expected = ImageTensors.of(decoded, order)) {
                    assertThat(t.shape()).as("%s as %s in %s", source.getKey(), format, order)
                            .containsExactly(expected.shape());
                    assertThat(t.toByteArray()).as("%s as %s in %s", source.getKey(), format, order)
                            .containsExactly(expected.toByteArray());
                }
            }
        }
        assertThat(written).as("the images ImageIO wrote as %s", format).isNotEmpty();
    }

    private Path write(BufferedImage image, String format) throws IOException {
        Path file = dir.resolve("image." + format);
        assertThat(ImageIO.write(image, format, file.toFile())).as("ImageIO writes %s", format).isTrue();
        return file;
    }
}
