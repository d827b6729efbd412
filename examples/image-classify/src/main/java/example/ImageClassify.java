package example;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.image.ImageTensors;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import java.awt.Color;
import java.awt.GradientPaint;
import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.IntStream;
import javax.imageio.ImageIO;

/**
 * A JPEG decoded in Java straight into a tensor, classified by torchvision's resnet18 (random
 * weights, seeded) in the embedded interpreter, and the scores back in Java: torch reads the pixels
 * where Java decoded them, and Java reads the scores where torch wrote them.
 */
public final class ImageClassify {
    private ImageClassify() {}

    public static void main(String[] args) throws IOException {
        Path jpeg = Path.of(args.length > 0 ? args[0] : "target/example.jpg");
        Path out = Path.of(args.length > 1 ? args[1] : "target");
        if (Files.notExists(jpeg)) {
            writeExampleJpeg(jpeg);
        }
        // The interpreter: -Ddlpack4j.python=... or DLPACK4J_PYTHON (a venv's python with torch and torchvision).
        Python py = Python.start();
        py.exec(resource("classify.py"));
        try (Tensor pixels = ImageTensors.read(jpeg);                     // [h, w, 3] uint8, RGB
             PyObject classify = py.getGlobal("classify");
             PyObject forTorch = PythonDlpack.toPython(pixels);
             PyObject torchPixels = py.importModule("torch").callMethod("from_dlpack", forTorch);
             PyObject torchAddress = torchPixels.callMethod("data_ptr");
             PyObject scores = classify.call(forTorch);
             PyObject scoresAddress = scores.callMethod("data_ptr");
             ManagedTensor back = PythonDlpack.fromDlpack(scores)) {       // torch's memory, no copy
            Tensor s = back.tensor();
            System.out.printf("decoded %s: %s uint8 at 0x%x, torch reads it at 0x%x: same memory %b%n", jpeg.getFileName(),
                    Arrays.toString(pixels.shape()), pixels.dataPointer(), torchAddress.asLong(),
                    torchAddress.asLong() == pixels.dataPointer());
            System.out.printf("scores %s %s at 0x%x, Java reads them at 0x%x: same memory %b%n", Arrays.toString(s.shape()),
                    s.dtype(), scoresAddress.asLong(), s.dataPointer(), scoresAddress.asLong() == s.dataPointer());
            float[] v = s.toFloatArray();
            int[] top = IntStream.range(0, v.length).boxed().sorted(Comparator.comparingDouble(i -> -v[i]))
                    .limit(5).mapToInt(Integer::intValue).toArray();
            StringBuilder line = new StringBuilder("top-5:");
            for (int i : top) {
                line.append(String.format(" %d (%.4f)", i, v[i]));
            }
            System.out.println(line);
            // For python/check.py: the decoded pixels and the scores, as raw bytes.
            Files.createDirectories(out);
            byte[] pixelBytes = pixels.withData(b -> b.toArray(ValueLayout.JAVA_BYTE));
            byte[] scoreBytes = s.withData(b -> b.toArray(ValueLayout.JAVA_BYTE));
            Files.write(out.resolve("pixels.u8"), pixelBytes);
            Files.write(out.resolve("scores.f32"), scoreBytes);
            System.out.printf("wrote %s and %s for the check%n", out.resolve("pixels.u8"), out.resolve("scores.f32"));
        }
    }

    private static String resource(String name) throws IOException {
        try (InputStream in = ImageClassify.class.getResourceAsStream("/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** A JPEG to classify when none is given: a sky, a sun and a field, drawn and written by ImageIO. */
    private static void writeExampleJpeg(Path file) throws IOException {
        BufferedImage image = new BufferedImage(320, 240, BufferedImage.TYPE_3BYTE_BGR);
        Graphics2D g = image.createGraphics();
        g.setPaint(new GradientPaint(0, 0, new Color(40, 90, 200), 0, 160, new Color(170, 210, 250)));
        g.fillRect(0, 0, 320, 160);
        g.setPaint(new GradientPaint(0, 160, new Color(60, 140, 40), 0, 240, new Color(20, 70, 10)));
        g.fillRect(0, 160, 320, 80);
        g.setColor(new Color(250, 220, 80));
        g.fillOval(230, 30, 50, 50);
        g.dispose();
        Files.createDirectories(file.toAbsolutePath().getParent());
        ImageIO.write(image, "jpeg", file.toFile());
    }
}
