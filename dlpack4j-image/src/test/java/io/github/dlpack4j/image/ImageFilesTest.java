package io.github.dlpack4j.image;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.image.Images.Layout;
import java.awt.image.BufferedImage;
import java.awt.image.IndexColorModel;
import java.io.IOException;
import java.nio.file.Path;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** PNG and JPEG files that ImageIO wrote, decoded by {@code read} into tensors with exactly ImageIO's pixels. */
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

    private Path write(BufferedImage image, String format) throws IOException {
        Path file = dir.resolve("image." + format);
        assertThat(ImageIO.write(image, format, file.toFile())).as("ImageIO writes %s", format).isTrue();
        return file;
    }
}
