package io.github.dlpack4j.image;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import java.awt.color.ColorSpace;
import java.awt.image.BufferedImage;
import java.awt.image.ColorModel;
import java.awt.image.DataBuffer;
import java.awt.image.DataBufferByte;
import java.awt.image.Raster;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import javax.imageio.IIOException;
import javax.imageio.ImageIO;
import javax.imageio.ImageReadParam;
import javax.imageio.ImageReader;
import javax.imageio.ImageTypeSpecifier;
import javax.imageio.stream.FileImageInputStream;
import javax.imageio.stream.ImageInputStream;

/**
 * An image file decoded by ImageIO into a tensor. The JDK's PNG and JPEG readers decode into an
 * interleaved image of exactly the tensor's layout (their destination,
 * {@link ImageReadParam#setDestination}), and that image's bytes go into the tensor in one bulk copy.
 * Decoding into the tensor's native memory itself (an image over a {@link SegmentDataBuffer}) would
 * save that copy but costs more than it saves: the readers' fast row copies work on Java arrays only,
 * and on any other buffer they fall back to one call per sample (ImageBench measures both).
 *
 * <p>Other readers are not trusted with a destination: the JDK's BMP reader writes a 24-bit file's
 * bytes into the destination's array as they lie in the file, blue first, whatever the destination's
 * band offsets say. Their images, and PNG and JPEG images with no such layout (indexed PNG, gray with
 * alpha, CMYK JPEG), are decoded as ImageIO decodes them and converted in {@link ImageToTensor}'s one
 * copy.
 */
final class ImageFiles {
    /**
     * The readers known to decode into a destination of another layout than their own as that layout
     * says (ImageFilesTest checks every reader of the JDK against {@code ImageIO.read}); matched by
     * class name, the classes being the JDK's internals.
     */
    private static final Set<String> DESTINATION_READERS = Set.of(
            "com.sun.imageio.plugins.png.PNGImageReader",
            "com.sun.imageio.plugins.jpeg.JPEGImageReader");

    private ImageFiles() {}

    static Tensor read(Path file, ChannelOrder order) throws IOException {
        if (Files.notExists(file)) {
            throw new NoSuchFileException(file.toString(), null, "no image file there");
        }
        try (ImageInputStream in = new FileImageInputStream(file.toFile())) {
            Iterator<ImageReader> readers = ImageIO.getImageReaders(in);
            if (!readers.hasNext()) {
                throw new IIOException(file + " is not an image ImageIO can read (it reads "
                        + String.join(", ", formats()) + ")");
            }
            ImageReader reader = readers.next();
            try {
                reader.setInput(in, true, true);
                return decode(reader, order);
            } catch (IllegalArgumentException e) {
                throw new IIOException(file + " cannot become an image tensor: " + e.getMessage(), e);
            } finally {
                reader.dispose();
            }
        }
    }

    private static Tensor decode(ImageReader reader, ChannelOrder order) throws IOException {
        Iterator<ImageTypeSpecifier> types = reader.getImageTypes(0);
        if (!types.hasNext()) {
            throw new IIOException("ImageIO's " + reader.getFormatName() + " reader cannot decode this image's "
                    + "colour space");
        }
        ColorModel cm = types.next().getColorModel();
        ImageToTensor.refuseWideSamples(cm); // before decoding it all
        int channels = interleavedChannels(cm);
        if (channels == 0 || !DESTINATION_READERS.contains(reader.getClass().getName())) {
            return ImageToTensor.of(reader.read(0), order);
        }
        int width = reader.getWidth(0);
        int height = reader.getHeight(0);
        if ((long) width * height * channels > Integer.MAX_VALUE) {
            throw new IIOException("the image is " + width + " by " + height + " pixels of " + channels
                    + " bytes, more than a BufferedImage holds (2^31 - 1 bytes)");
        }
        BufferedImage decoded = new BufferedImage(TensorToImage.colorModel(channels),
                Raster.createInterleavedRaster(DataBuffer.TYPE_BYTE, width, height, width * channels, channels,
                        order.byteOffsets(channels), null),
                false, null);
        ImageReadParam param = reader.getDefaultReadParam();
        param.setDestination(decoded);
        reader.read(0, param);
        byte[] bytes = ((DataBufferByte) decoded.getRaster().getDataBuffer()).getData();
        Tensor t = Tensor.zeros(DataType.UINT8, height, width, channels);
        try {
            t.withData(pixels -> {
                MemorySegment.copy(bytes, 0, pixels, ValueLayout.JAVA_BYTE, 0, bytes.length);
                return null;
            });
        } catch (RuntimeException | Error e) {
            t.close();
            throw e;
        }
        return t;
    }

    /**
     * {@return the channels of a tensor that a reader's image of colour model {@code cm} can be
     * decoded straight into (1 for gray, 3 for RGB, 4 for RGBA), or 0 if it has no such layout}
     */
    private static int interleavedChannels(ColorModel cm) {
        if (!ImageToTensor.hasRawBytes(cm)) {
            return 0;
        }
        int n = cm.getNumComponents();
        boolean gray = n == 1 && !cm.hasAlpha() && cm.getColorSpace().getType() == ColorSpace.TYPE_GRAY;
        boolean rgb = cm.getColorSpace().isCS_sRGB() && (n == 3 && !cm.hasAlpha() || n == 4 && cm.hasAlpha());
        return gray || rgb ? n : 0;
    }

    private static TreeSet<String> formats() {
        TreeSet<String> names = new TreeSet<>();
        Arrays.stream(ImageIO.getReaderFormatNames()).map(s -> s.toLowerCase(Locale.ROOT)).forEach(names::add);
        return names;
    }
}
