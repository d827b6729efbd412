package io.github.dlpack4j.image;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.image.Images.Layout;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tensors, images over them, tensors of those images and DLPack exports, let go of in every order:
 * the memory stays readable while any of them holds it and is freed once, after the last
 * ({@link NoLeaks} checks the last part after each test).
 */
@ExtendWith(NoLeaks.class)
class LifetimeTest {
    @TempDir
    Path dir;

    @Test
    void anImageKeepsShowingItsPixelsAfterItsTensorIsClosed() {
        long before = Dlpack.nativeBytesInUse();
        Tensor t = ImageTensors.of(Images.of(Layout.THREE_BYTE_BGR));
        BufferedImage image = ImageTensors.toImage(t);
        t.close();
        assertThatThrownBy(() -> t.getLong(0, 0, 0)).isInstanceOf(IllegalStateException.class);
        assertThat(image.getRGB(3, 2)).isEqualTo(Images.of(Layout.THREE_BYTE_BGR).getRGB(3, 2));
        assertThat(Dlpack.nativeBytesInUse()).as("the image holds the memory").isGreaterThan(before);
    }

    @Test
    void anImageThatIsCollectedLetsGoOfItsTensorsMemory() {
        long before = Dlpack.nativeBytesInUse();
        try (Tensor t = Tensor.zeros(DataType.UINT8, 64, 64, 3)) {
            ImageTensors.toImage(t).setRGB(0, 0, 0xffffff); // the image is dropped at once
        }
        NoLeaks.settle(before);
        assertThat(Dlpack.nativeBytesInUse()).isEqualTo(before);
    }

    @Test
    void theTensorTheImageAndTheImagesTensorCloseInEveryOrder() {
        for (List<Integer> order : List.of(List.of(0, 1, 2), List.of(0, 2, 1), List.of(1, 0, 2), List.of(1, 2, 0),
                List.of(2, 0, 1), List.of(2, 1, 0))) {
            Tensor original = ImageTensors.of(Images.of(Layout.FOUR_BYTE_ABGR));
            BufferedImage[] image = {ImageTensors.toImage(original)};
            Tensor again = ImageTensors.of(image[0]);
            Runnable[] steps = {
                original::close,
                () -> image[0] = null, // the image's hold goes when it is collected
                again::close,
            };
            for (int step : order) {
                steps[step].run();
                for (Tensor t : List.of(original, again)) {
                    if (!t.isClosed()) {
                        assertThat(t.toByteArray()).as("order %s, after step %d", order, step)
                                .containsExactly(Images.expected(Layout.FOUR_BYTE_ABGR, ChannelOrder.RGB));
                    }
                }
                if (image[0] != null) {
                    assertThat(image[0].getRaster().getSample(4, 3, 3)).isEqualTo(Images.alpha(4, 3));
                }
                System.gc();
            }
        }
    }

    @Test
    void anExportOfAReadTensorOutlivesTheTensorAndIsDeletedOnce() throws IOException {
        Path file = dir.resolve("x.png");
        ImageIO.write(Images.of(Layout.INT_RGB), "png", file.toFile());
        int exportsBefore = Dlpack.liveExports();
        MemorySegment exported;
        try (Tensor t = ImageTensors.read(file)) {
            exported = Dlpack.exportVersioned(t);
        }
        assertThat(Dlpack.liveExports()).isEqualTo(exportsBefore + 1);
        try (ManagedTensor m = ManagedTensor.adoptVersioned(exported)) {
            assertThat(m.tensor().toByteArray()).containsExactly(Images.expected(Layout.INT_RGB, ChannelOrder.RGB));
        }
        assertThat(Dlpack.liveExports()).isEqualTo(exportsBefore);
    }

    @Test
    void anExportOfAnImagesTensorKeepsThePixelsWhenTheImageAndTensorAreGone() {
        MemorySegment exported;
        Tensor original = ImageTensors.of(Images.of(Layout.BYTE_GRAY));
        try (Tensor view = ImageTensors.of(ImageTensors.toImage(original))) {
            exported = Dlpack.exportVersioned(view);
        }
        original.close();
        NoLeaks.settle(-1); // the image is collected
        try (ManagedTensor m = ManagedTensor.adoptVersioned(exported)) {
            assertThat(m.tensor().toByteArray()).containsExactly(Images.expected(Layout.BYTE_GRAY, ChannelOrder.RGB));
        }
    }

    @Test
    void closingATensorTwiceFreesItsMemoryOnce() {
        Tensor t = ImageTensors.of(Images.of(Layout.INT_ARGB));
        BufferedImage image = ImageTensors.toImage(t);
        Tensor again = ImageTensors.of(image);
        t.close();
        t.close();
        again.close();
        again.close();
        assertThat(image.getRaster().getSample(1, 1, 3)).isEqualTo(Images.alpha(1, 1));
    }
}
