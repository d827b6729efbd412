package io.github.dlpack4j.image;

/**
 * The order of the colour channels along the last dimension of an image tensor. Alpha, when there
 * is one, is always last; a gray image has one channel whatever the order.
 */
public enum ChannelOrder {
    /** Red, green, blue (and alpha): what torchvision, PIL and most models take. */
    RGB,
    /** Blue, green, red (and alpha): what OpenCV takes. */
    BGR;

    /**
     * The sample, among red, green, blue and alpha (0 to 3), that channel {@code c} of a tensor with
     * {@code channels} channels holds; gray has one channel, holding sample 0.
     */
    int sampleOf(int c, int channels) {
        return this == BGR && channels >= 3 && c < 3 ? 2 - c : c;
    }

    /**
     * {@return where each sample (red, green, blue, alpha, or gray) lies within a pixel of
     * {@code channels} bytes in this order} The band offsets of an image's interleaved raster.
     */
    int[] byteOffsets(int channels) {
        int[] offsets = new int[channels];
        for (int c = 0; c < channels; c++) {
            offsets[sampleOf(c, channels)] = c;
        }
        return offsets;
    }
}
