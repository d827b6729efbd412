package io.github.dlpack4j.cli;

import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.cli.DoctorReport.Images;
import io.github.dlpack4j.cli.DoctorReport.LayoutRow;
import io.github.dlpack4j.cli.DoctorReport.Outcome;
import io.github.dlpack4j.image.ImageTensors;
import java.awt.image.BufferedImage;
import java.awt.image.WritableRaster;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import javax.imageio.ImageIO;

/** dlpack4j-image for {@code doctor}: each raster layout ImageIO gives, and PNG and JPEG files, tried for real. */
final class ImageProbe {
    /** The layouts ImageIO's PNG and JPEG readers give, by the name of their {@code BufferedImage} type. */
    private static final Map<String, Integer> LAYOUTS = layouts();

    private ImageProbe() {}

    private static Map<String, Integer> layouts() {
        Map<String, Integer> m = new LinkedHashMap<>();
        m.put("TYPE_3BYTE_BGR", BufferedImage.TYPE_3BYTE_BGR);
        m.put("TYPE_4BYTE_ABGR", BufferedImage.TYPE_4BYTE_ABGR);
        m.put("TYPE_BYTE_GRAY", BufferedImage.TYPE_BYTE_GRAY);
        m.put("TYPE_INT_RGB", BufferedImage.TYPE_INT_RGB);
        m.put("TYPE_INT_ARGB", BufferedImage.TYPE_INT_ARGB);
        return m;
    }

    static Images examine() {
        List<String> readers;
        try {
            TreeSet<String> names = new TreeSet<>();
            Arrays.stream(ImageIO.getReaderFormatNames()).map(n -> n.toLowerCase(Locale.ROOT)).forEach(names::add);
            readers = List.copyOf(names);
        } catch (RuntimeException | LinkageError e) {
            return new Images("error", Main.oneLine(e), List.of(), List.of(), Map.of());
        }
        List<LayoutRow> rows = new ArrayList<>();
        LAYOUTS.forEach((name, type) -> rows.add(new LayoutRow(name, toTensor(type), fromTensor(type))));
        Map<String, Outcome> files = new LinkedHashMap<>();
        files.put("png", file("png", BufferedImage.TYPE_4BYTE_ABGR));
        files.put("jpeg", file("jpeg", BufferedImage.TYPE_3BYTE_BGR));
        return new Images("ok", null, readers, rows, files);
    }

    /** A small image of {@code type} whose samples are all different. */
    private static BufferedImage sample(int type) {
        BufferedImage image = new BufferedImage(5, 3, type);
        WritableRaster r = image.getRaster();
        for (int y = 0; y < 3; y++) {
            for (int x = 0; x < 5; x++) {
                for (int b = 0; b < r.getNumBands(); b++) {
                    r.setSample(x, y, b, (x * 47 + y * 13 + b * 71) & 0xff);
                }
            }
        }
        return image;
    }

    /** {@code ImageTensors.of} of the layout: every sample where it should be. */
    private static Outcome toTensor(int type) {
        BufferedImage image = sample(type);
        WritableRaster r = image.getRaster();
        try (Tensor t = ImageTensors.of(image)) {
            for (int y = 0; y < 3; y++) {
                for (int x = 0; x < 5; x++) {
                    for (int b = 0; b < r.getNumBands(); b++) {
                        if (t.getLong(y, x, b) != r.getSample(x, y, b)) {
                            return Outcome.no("sample " + b + " of pixel (" + x + ", " + y + ") is " + t.getLong(y, x, b)
                                    + ", not " + r.getSample(x, y, b));
                        }
                    }
                }
            }
            return Outcome.yes("a " + Arrays.toString(t.shape()) + " uint8 tensor, one copy");
        } catch (RuntimeException e) {
            return Outcome.no(Main.oneLine(e));
        }
    }

    /** The layout's tensor as an image over its memory ({@code toImage}), and that image as a tensor again without a copy. */
    private static Outcome fromTensor(int type) {
        try (Tensor t = ImageTensors.of(sample(type))) {
            BufferedImage image = ImageTensors.toImage(t);
            try (Tensor again = ImageTensors.of(image)) {
                return again.dataPointer() == t.dataPointer()
                        ? Outcome.yes("an image over the tensor's memory, and back without a copy")
                        : Outcome.no("the image's tensor is a copy");
            }
        } catch (RuntimeException e) {
            return Outcome.no(Main.oneLine(e));
        }
    }

    /** A file ImageIO wrote, decoded by {@code ImageTensors.read}: the same pixels as ImageIO.read's. */
    private static Outcome file(String format, int type) {
        Path file = null;
        try {
            file = Files.createTempFile("dlpack4j-doctor", "." + format);
            if (!ImageIO.write(sample(type), format, file.toFile())) {
                return Outcome.no("ImageIO has no " + format + " writer");
            }
            try (Tensor read = ImageTensors.read(file);
                 Tensor expected = ImageTensors.of(ImageIO.read(file.toFile()))) {
                return Arrays.equals(read.toByteArray(), expected.toByteArray())
                        ? Outcome.yes("decoded by ImageIO into the tensor's layout, one copy")
                        : Outcome.no("the pixels differ from ImageIO.read's");
            }
        } catch (IOException | RuntimeException e) {
            return Outcome.no(Main.oneLine(e));
        } finally {
            if (file != null) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException ignored) {
                    // a temporary file left behind is no failure of the check
                }
            }
        }
    }
}
