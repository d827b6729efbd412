package io.github.dlpack4j.image;

import io.github.dlpack4j.Tensor;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Java images as uint8 tensors of {@code [height, width, channels]} and back: a
 * {@code BufferedImage}, or a PNG or JPEG file that ImageIO decodes, becomes a {@link Tensor} that
 * NumPy, PyTorch or native code reads through DLPack, and a model's output tensor becomes an image.
 *
 * <p><b>Channels.</b> Three for colour, in RGB order ({@link ChannelOrder#BGR} on request), a fourth
 * for alpha when the image has one (RGBA, or BGRA), one for gray. Alpha is never premultiplied.
 *
 * <table>
 *   <caption>What becomes what, and what it costs</caption>
 *   <tr><th>image</th><th>tensor</th><th>memory</th></tr>
 *   <tr><td>from {@link #toImage}, in the order asked for (or a {@code getSubimage} of it)</td>
 *       <td>its pixels</td><td>shared, no copy</td></tr>
 *   <tr><td>{@code TYPE_3BYTE_BGR}, {@code TYPE_INT_RGB}, {@code TYPE_INT_BGR}, 8-bit interleaved RGB</td>
 *       <td>{@code [h, w, 3]}</td><td>one copy</td></tr>
 *   <tr><td>{@code TYPE_4BYTE_ABGR}, {@code TYPE_INT_ARGB}, 8-bit interleaved RGBA</td>
 *       <td>{@code [h, w, 4]}</td><td>one copy</td></tr>
 *   <tr><td>{@code TYPE_BYTE_GRAY}</td><td>{@code [h, w, 1]}</td><td>one copy</td></tr>
 *   <tr><td>8-bit gray with alpha (PNG)</td><td>{@code [h, w, 4]}, the gray in R, G and B</td>
 *       <td>one copy</td></tr>
 *   <tr><td>indexed (palette PNG, GIF), 1-, 2- and 4-bit samples, premultiplied alpha, 565/555
 *       colours, CMYK or another colour space</td><td>{@code [h, w, 3]}, or 4 with alpha, converted to sRGB as
 *       {@link BufferedImage#getRGB} does</td><td>one copy</td></tr>
 *   <tr><td>16-bit samples ({@code TYPE_USHORT_GRAY}, 16-bit PNG)</td><td>refused: they do not fit
 *       uint8</td><td></td></tr>
 * </table>
 *
 * <p>A {@code BufferedImage} made by the JDK or ImageIO keeps its pixels in a Java array, which has no
 * address that DLPack could hand out, so {@link #of} copies it once, straight into the tensor's
 * layout; {@link #isZeroCopy} says which case an image is. {@link #read} has the JDK's PNG and JPEG
 * readers decode into an image of the tensor's layout and copies that once; files of other formats are
 * decoded as ImageIO decodes them and converted in {@link #of}'s one copy.
 *
 * <p><b>Lifetimes.</b> The tensors from {@link #of} and {@link #read} are owning: close them (their
 * DLPack exports keep the memory as long as they live). An image from {@link #toImage} shows the
 * tensor's memory and holds a handle of its own on it: the tensor may be closed first, and the memory
 * is let go once the image, the tensor and every export are gone, the image's part when it is
 * collected. A tensor from {@link #of} of such an image is another owning handle to the same memory.
 *
 * <p>For example:
 * {@snippet :
 * try (Tensor pixels = ImageTensors.read(Path.of("cat.jpg"))) {    // [h, w, 3] uint8, RGB
 *     long height = pixels.shape()[0];
 *     int red = (int) pixels.getLong(0, 0, 0);                     // the top left pixel's red
 *     BufferedImage same = ImageTensors.toImage(pixels);           // over the tensor's memory
 * }
 * }
 */
public final class ImageTensors {
    private ImageTensors() {}

    /**
     * The pixels of {@code image} as a uint8 {@code [height, width, channels]} tensor in RGB order
     * (RGBA with alpha; one channel for gray).
     *
     * @param image any image whose samples have 8 bits or fewer (see the table above)
     * @return an owning tensor: close it
     * @throws IllegalArgumentException if the image has samples wider than 8 bits
     */
    public static Tensor of(BufferedImage image) {
        return of(image, ChannelOrder.RGB);
    }

    /**
     * The pixels of {@code image} as a uint8 {@code [height, width, channels]} tensor with its colour
     * channels in {@code order} (alpha last; one channel for gray). A view of the image's memory when
     * {@link #isZeroCopy} says so, one copy otherwise.
     *
     * @param image any image whose samples have 8 bits or fewer (see the table above)
     * @param order the order of the colour channels in the tensor
     * @return an owning tensor: close it
     * @throws IllegalArgumentException if the image has samples wider than 8 bits
     */
    public static Tensor of(BufferedImage image, ChannelOrder order) {
        Objects.requireNonNull(image, "image");
        Objects.requireNonNull(order, "order");
        return ImageToTensor.of(image, order);
    }

    /**
     * Whether {@link #of(BufferedImage, ChannelOrder)} shares {@code image}'s memory (true: an image
     * from {@link #toImage} in the same order, or a subimage of one) or copies its pixels once (false;
     * also for an image over such memory with another colour model than 8-bit sRGB or gray, whose
     * pixels are converted).
     *
     * @param image an image
     * @param order the channel order the tensor would have
     * @return true if the tensor would be a view of the image's pixels
     */
    public static boolean isZeroCopy(BufferedImage image, ChannelOrder order) {
        Objects.requireNonNull(image, "image");
        Objects.requireNonNull(order, "order");
        return ImageToTensor.isZeroCopy(image, order);
    }

    /**
     * A tensor's pixels as an image, in RGB order; see {@link #toImage(Tensor, ChannelOrder)}.
     *
     * @param pixels a compact, writable uint8 CPU tensor of {@code [height, width, channels]}, with 1, 3 or 4 channels
     * @return an image over the tensor's memory
     * @throws IllegalArgumentException as {@link #toImage(Tensor, ChannelOrder)}
     */
    public static BufferedImage toImage(Tensor pixels) {
        return toImage(pixels, ChannelOrder.RGB);
    }

    /**
     * A {@code BufferedImage} over a tensor's memory, without a copy: gray for one channel, RGB for
     * three, RGBA (not premultiplied) for four, the colour channels in {@code order}. Writes to the
     * image are writes to the tensor and the other way round. The image holds the memory until it is
     * collected, even after the tensor is closed. Its type is {@code TYPE_CUSTOM}: Java2D draws it
     * and ImageIO writes it, more slowly than the JDK's own types (draw it into one of them to edit
     * it at length).
     *
     * @param pixels a compact, writable uint8 CPU tensor of {@code [height, width, channels]}, with 1, 3 or 4 channels
     * @param order  the order of the tensor's colour channels
     * @return an image over the tensor's memory
     * @throws IllegalArgumentException if the tensor is not uint8, not 3-d, has another number of
     *                                  channels, is strided (pass {@code pixels.copy()}), read-only,
     *                                  not in CPU memory, empty, or over 2^31 - 1 bytes
     * @throws IllegalStateException    if the tensor is closed
     */
    public static BufferedImage toImage(Tensor pixels, ChannelOrder order) {
        Objects.requireNonNull(pixels, "pixels");
        Objects.requireNonNull(order, "order");
        return TensorToImage.toImage(pixels, order);
    }

    /**
     * Decodes an image file (PNG, JPEG, or any format ImageIO reads) into a tensor in RGB order;
     * see {@link #read(Path, ChannelOrder)}.
     *
     * @param file the image file
     * @return an owning tensor: close it
     * @throws IOException as {@link #read(Path, ChannelOrder)}
     */
    public static Tensor read(Path file) throws IOException {
        return read(file, ChannelOrder.RGB);
    }

    /**
     * Decodes an image file (PNG, JPEG, or any format ImageIO reads) into a uint8
     * {@code [height, width, channels]} tensor with its colour channels in {@code order}: the same
     * pixels as {@code of(ImageIO.read(file), order)}, at the cost of ImageIO's decoding and one
     * copy. The JDK's PNG and JPEG readers decode 8-bit RGB, RGBA and gray straight into the tensor's
     * layout; other images, and every file of another format (BMP, GIF, TIFF, WBMP, a plug-in's), are
     * decoded as ImageIO decodes them and converted as the table above says.
     *
     * @param file  the image file
     * @param order the order of the colour channels in the tensor
     * @return an owning tensor: close it
     * @throws java.nio.file.NoSuchFileException if there is no such file
     * @throws javax.imageio.IIOException        if the file is not an image ImageIO reads (the message
     *                                           names the formats it reads), is damaged, or has
     *                                           samples wider than 8 bits
     * @throws IOException                       if the file cannot be read
     */
    public static Tensor read(Path file, ChannelOrder order) throws IOException {
        Objects.requireNonNull(file, "file");
        Objects.requireNonNull(order, "order");
        return ImageFiles.read(file, order);
    }
}
