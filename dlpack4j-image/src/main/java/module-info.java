/**
 * Java images as dlpack4j tensors and back: a {@code BufferedImage}, or a file ImageIO decodes, as a
 * uint8 tensor of {@code [height, width, channels]} that NumPy, PyTorch or native code read through
 * DLPack, and a tensor as a {@code BufferedImage}: {@link io.github.dlpack4j.image.ImageTensors}.
 * It needs the JDK's {@code java.desktop} module and nothing else besides dlpack4j's core; on the
 * module path grant native access to {@code io.github.dlpack4j.core} as for the rest of dlpack4j.
 */
module io.github.dlpack4j.image {
    requires transitive io.github.dlpack4j.core;
    requires transitive java.desktop;

    exports io.github.dlpack4j.image;
}
