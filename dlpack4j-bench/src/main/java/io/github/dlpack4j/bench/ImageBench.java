package io.github.dlpack4j.bench;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.image.ImageTensors;
import java.awt.image.BufferedImage;
import java.awt.image.DataBuffer;
import java.awt.image.DataBufferByte;
import java.awt.image.DataBufferInt;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import javax.imageio.ImageIO;
import javax.imageio.ImageReadParam;
import javax.imageio.ImageReader;
import javax.imageio.stream.FileImageInputStream;
import javax.imageio.stream.ImageInputStream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * Java images as tensors (dlpack4j-image). A 640x480 JPEG and PNG (a photo-like gradient with noise,
 * written by ImageIO): ImageIO's own decoding ({@code ImageIO.read}) against
 * {@code ImageTensors.read}, whose target is ImageIO's decode time plus at most one copy; beside them
 * the two other ways there are, ImageIO.read then {@code ImageTensors.of} (decode, then a converting
 * copy), and decoding straight into the tensor's native memory (an image from {@code toImage} as the
 * reader's destination), which saves the copy but leaves the readers' array fast paths. The four are
 * timed again by turns in one process after the measurement, and their ratios to ImageIO's decoding
 * printed ({@code [in-fork] image}). And
 * {@code ImageTensors.of} + close of an image of each layout ImageIO gives, beside the floor of one
 * copy: the image's array copied into a new tensor as it is (by turns in one process after
 * {@code ofThenClose}: {@code [in-fork] image of}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Djava.awt.headless=true", "-Xms1g", "-Xmx1g"})
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class ImageBench {
    static final int WIDTH = 640;
    static final int HEIGHT = 480;

    /** An image file of {@code format}, 640x480, with the pixels of {@link #photo}. */
    @State(Scope.Thread)
    public static class EncodedImage {
        /** The format ImageIO writes it in. */
        @Param({"jpeg", "png"})
        public String format;
        Path path;

        @Setup(Level.Trial)
        public void setUp() throws IOException {
            path = Files.createTempFile("dlpack4j-bench", "." + format);
            ImageIO.write(photo(BufferedImage.TYPE_3BYTE_BGR), format, path.toFile());
        }

        @TearDown(Level.Trial)
        public void tearDown(BenchmarkParams params) throws IOException {
            if (params.getBenchmark().endsWith(".imageIoDecodes")) {
                double[] ns = InFork.nanosPerCall(10, 100,
                        () -> ImageIO.read(path.toFile()),
                        () -> closed(ImageTensors.read(path)),
                        () -> closed(ImageTensors.of(ImageIO.read(path.toFile()))),
                        () -> decodeIntoANativeImage(path));
                double decode = ns[0];
                double read = ns[1];
                double readThenOf = ns[2];
                double intoNative = ns[3];
                System.out.printf("%n[in-fork] image %s %dx%d: ImageIO.read %.0f us; ImageTensors.read %.0f us (%.2fx), "
                                + "ImageIO.read + of %.0f us (%.2fx), decoding into native memory %.0f us (%.2fx)%n",
                        format, WIDTH, HEIGHT, decode / 1e3, read / 1e3, read / decode, readThenOf / 1e3,
                        readThenOf / decode, intoNative / 1e3, intoNative / decode);
            }
            Files.deleteIfExists(path);
        }
    }

    /** An image of {@code layout}, 640x480. */
    @State(Scope.Thread)
    public static class DecodedImage {
        /** Its {@code BufferedImage} type. */
        @Param({"TYPE_3BYTE_BGR", "TYPE_4BYTE_ABGR", "TYPE_BYTE_GRAY", "TYPE_INT_RGB", "TYPE_INT_ARGB"})
        public String layout;
        BufferedImage image;
        /** The image's pixels as they lie in its array, in bytes. */
        MemorySegment raw;

        @Setup(Level.Trial)
        public void setUp() throws ReflectiveOperationException {
            image = photo(BufferedImage.class.getField(layout).getInt(null));
            DataBuffer b = image.getRaster().getDataBuffer();
            raw = b instanceof DataBufferInt ints ? MemorySegment.ofArray(ints.getData())
                    : MemorySegment.ofArray(((DataBufferByte) b).getData());
        }

        /** After {@code ofThenClose}, it and the bulk copy timed by turns in this process. */
        @TearDown(Level.Trial)
        public void tearDown(BenchmarkParams params) {
            if (params.getBenchmark().endsWith(".ofThenClose")) {
                double[] ns = InFork.nanosPerCall(10, 100, () -> closed(ImageTensors.of(image)), () -> bulkCopy(raw));
                System.out.printf("%n[in-fork] image of %s %dx%d: of + close %.0f us, one bulk copy %.0f us (%.1fx)%n",
                        layout, WIDTH, HEIGHT, ns[0] / 1e3, ns[1] / 1e3, ns[0] / ns[1]);
            }
        }
    }

    /** Gradients with noise in each channel, so that JPEG and PNG have something like a photo to code. */
    static BufferedImage photo(int type) {
        BufferedImage image = new BufferedImage(WIDTH, HEIGHT, type);
        Random random = new Random(27);
        for (int y = 0; y < HEIGHT; y++) {
            for (int x = 0; x < WIDTH; x++) {
                int r = Math.min(255, x * 255 / WIDTH + random.nextInt(16));
                int g = Math.min(255, y * 255 / HEIGHT + random.nextInt(16));
                int b = Math.min(255, (x + y) * 255 / (WIDTH + HEIGHT) + random.nextInt(16));
                image.setRGB(x, y, 0xff000000 | r << 16 | g << 8 | b);
            }
        }
        return image;
    }

    /** ImageIO's own decoding of the file into the image its reader chooses: the baseline. */
    @Benchmark
    public BufferedImage imageIoDecodes(EncodedImage f) throws IOException {
        return ImageIO.read(f.path.toFile());
    }

    /** The file decoded into a tensor, then closed. */
    @Benchmark
    public long imageTensorsRead(EncodedImage f) throws IOException {
        try (Tensor t = ImageTensors.read(f.path)) {
            return t.dataPointer();
        }
    }

    /** The way without {@code read}: ImageIO's decoding, then {@code of}'s converting copy. */
    @Benchmark
    public long imageIoReadThenOf(EncodedImage f) throws IOException {
        try (Tensor t = ImageTensors.of(ImageIO.read(f.path.toFile()))) {
            return t.dataPointer();
        }
    }

    /** The way without a copy: the reader decodes into an image over a tensor's native memory. */
    @Benchmark
    public long decodingIntoNativeMemory(EncodedImage f) {
        return decodeIntoANativeImage(f.path);
    }

    /** {@code ImageTensors.of} of an image of each layout, then closed: one copy, converting. */
    @Benchmark
    public long ofThenClose(DecodedImage i) {
        try (Tensor t = ImageTensors.of(i.image)) {
            return t.dataPointer();
        }
    }

    /** The floor of one copy: the image's array into a new tensor as it lies, no conversion. */
    @Benchmark
    public long bulkCopyThenClose(DecodedImage i) {
        return bulkCopy(i.raw);
    }

    static long bulkCopy(MemorySegment raw) {
        try (Tensor t = Tensor.zeros(DataType.UINT8, raw.byteSize())) {
            t.withData(into -> {
                MemorySegment.copy(raw, 0, into, 0, raw.byteSize());
                return null;
            });
            return t.dataPointer();
        }
    }

    static long decodeIntoANativeImage(Path file) {
        try (Tensor t = Tensor.zeros(DataType.UINT8, HEIGHT, WIDTH, 3);
             ImageInputStream in = new FileImageInputStream(file.toFile())) {
            ImageReader reader = ImageIO.getImageReaders(in).next();
            reader.setInput(in, true, true);
            ImageReadParam param = reader.getDefaultReadParam();
            param.setDestination(ImageTensors.toImage(t));
            reader.read(0, param);
            reader.dispose();
            return t.dataPointer();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Object closed(Tensor t) {
        t.close();
        return t;
    }
}
