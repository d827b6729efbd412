package io.github.dlpack4j;

/**
 * What a consumer asked of one export, validated: the ABI, the copy policy, the device and the stream
 * (the arguments of Python's {@code __dlpack__(stream, max_version, dl_device, copy)}).
 *
 * @param versioned whether to export a {@code DLManagedTensorVersioned} (DLPack 1.x, which has flags)
 *                  rather than a legacy {@code DLManagedTensor}
 * @param copy      {@code TRUE}: always copy; {@code FALSE}: never copy; null: copy only if needed
 * @param device    the device the consumer wants the data on; null for the exporter's own
 * @param stream    the consumer's stream, as DLPack numbers streams for the device; null for none
 */
public record ExportRequest(boolean versioned, Boolean copy, Device device, Long stream) {
    /** A versioned export of the data as it is: no copy unless needed, own device, no stream. */
    public static final ExportRequest VERSIONED = new ExportRequest(true, null, null, null);
    /** A legacy export of the data as it is. */
    public static final ExportRequest LEGACY = new ExportRequest(false, null, null, null);
}
