package io.github.dlpack4j;

import java.util.Locale;
import java.util.Objects;

/**
 * A device: its type and its index among devices of that type ({@code DLDevice}).
 *
 * @param type the device kind
 * @param id   the device index, 0 for the CPU
 */
public record Device(DeviceType type, int id) {
    /** The host CPU, {@code (kDLCPU, 0)}. */
    public static final Device CPU = new Device(DeviceType.CPU, 0);

    /** Validates the fields. */
    public Device {
        Objects.requireNonNull(type, "type");
        if (id < 0) {
            throw new DlpackException("device_id = " + id + ": must not be negative");
        }
    }

    /** Short form such as {@code cpu:0} or {@code cuda:1}. */
    @Override
    public String toString() {
        return type.name().toLowerCase(Locale.ROOT) + ":" + id;
    }
}
