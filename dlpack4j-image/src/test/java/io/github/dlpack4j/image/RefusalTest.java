package io.github.dlpack4j.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import javax.imageio.IIOException;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** What cannot be an image or an image tensor is refused, with a message that says what to do. */
@ExtendWith(NoLeaks.class)
class RefusalTest {
    @TempDir
    Path dir;

    @Test
    void aTensorOfAnotherDtypeIsRefusedWithHowToConvertIt() {
        try (Tensor t = Tensor.zeros(DataType.FLOAT32, 2, 2, 3)) {
            assertThatThrownBy(() -> ImageTensors.toImage(t))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("uint8")
                    .hasMessageContaining("float32")
                    .hasMessageContaining("torch.uint8");
        }
    }

    @Test
    void aTensorOfAnotherRankIsRefusedWithHowToReshapeIt() {
        try (Tensor chw = Tensor.zeros(DataType.UINT8, 1, 3, 2, 2); Tensor gray = Tensor.zeros(DataType.UINT8, 2, 2)) {
            assertThatThrownBy(() -> ImageTensors.toImage(chw))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("[height, width, channels]")
                    .hasMessageContaining("[1, 3, 2, 2]");
            assertThatThrownBy(() -> ImageTensors.toImage(gray))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("reshape(h, w, 1)");
        }
    }

    @Test
    void aTensorWithAnotherNumberOfChannelsIsRefused() {
        try (Tensor t = Tensor.zeros(DataType.UINT8, 2, 2, 2)) {
            assertThatThrownBy(() -> ImageTensors.toImage(t))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("1 (gray), 3 (RGB) or 4 (RGBA) channels, this tensor 2");
        }
    }

    @Test
    void aStridedTensorIsRefusedWithTheCompactCopyToPass() {
        try (Tensor chw = Tensor.zeros(DataType.UINT8, 3, 4, 5)) {
            Tensor hwc = chw.permute(1, 2, 0);
            assertThatThrownBy(() -> ImageTensors.toImage(hwc))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("strides [5, 1, 20]")
                    .hasMessageContaining("tensor.copy()");
            try (Tensor compact = hwc.copy()) {
                assertThat(ImageTensors.toImage(compact).getWidth()).isEqualTo(5);
            }
        }
    }

    @Test
    void aReadOnlyTensorIsRefusedBecauseImagesAreWritable() {
        try (Tensor t = Tensor.zeros(DataType.UINT8, 2, 2, 3)) {
            assertThatThrownBy(() -> ImageTensors.toImage(t.readOnly()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("read-only")
                    .hasMessageContaining("copy()");
        }
    }

    @Test
    void anEmptyTensorIsRefused() {
        try (Tensor t = Tensor.zeros(DataType.UINT8, 0, 2, 3)) {
            assertThatThrownBy(() -> ImageTensors.toImage(t))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("shape [0, 2, 3]");
        }
    }

    @Test
    void aClosedTensorIsRefused() {
        Tensor t = Tensor.zeros(DataType.UINT8, 2, 2, 3);
        t.close();
        assertThatThrownBy(() -> ImageTensors.toImage(t)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void anAbsentFileIsNoSuchFile() {
        Path absent = dir.resolve("absent.png");
        assertThatThrownBy(() -> ImageTensors.read(absent))
                .isInstanceOf(NoSuchFileException.class)
                .hasMessageContaining("absent.png");
    }

    @Test
    void aDirectoryIsAnIoErrorThatSaysSo() {
        assertThatThrownBy(() -> ImageTensors.read(dir))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("directory");
    }

    @Test
    void aFileThatIsNotAnImageIsRefusedWithTheFormatsImageIoReads() throws IOException {
        Path text = Files.writeString(dir.resolve("notes.png"), "not an image at all\n");
        assertThatThrownBy(() -> ImageTensors.read(text))
                .isInstanceOf(IIOException.class)
                .hasMessageContaining("notes.png is not an image ImageIO can read")
                .hasMessageContaining("jpeg")
                .hasMessageContaining("png");
    }

    @Test
    void aTruncatedPngIsAnIoError() throws IOException {
        Path file = dir.resolve("whole.png");
        ImageIO.write(Images.of(Images.Layout.THREE_BYTE_BGR, 64, 64), "png", file.toFile());
        byte[] bytes = Files.readAllBytes(file);
        Path cut = Files.write(dir.resolve("cut.png"), java.util.Arrays.copyOf(bytes, bytes.length / 2));
        assertThatThrownBy(() -> ImageTensors.read(cut)).isInstanceOf(IOException.class);
    }

    @Test
    void aSixteenBitPngIsRefusedBeforeItIsDecoded() throws IOException {
        Path file = dir.resolve("wide.png");
        ImageIO.write(new BufferedImage(3, 3, BufferedImage.TYPE_USHORT_GRAY), "png", file.toFile());
        assertThatThrownBy(() -> ImageTensors.read(file))
                .isInstanceOf(IIOException.class)
                .hasMessageContaining("wide.png")
                .hasMessageContaining("16-bit samples");
    }
}
