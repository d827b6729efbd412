package io.github.dlpack4j.arrow;

/**
 * What {@link ArrowTensors#of(org.apache.arrow.vector.FieldVector, long, long, NullPolicy)} does with
 * null values: DLPack tensors have no validity bitmap, so a null can only be read as whatever value
 * its slot holds.
 */
public enum NullPolicy {
    /**
     * Refuse a vector with a null in the rows asked for, saying how many and the first row: the
     * safe default. It reads the validity bitmaps of those rows (one bit per value; the only part
     * of {@code of} whose cost grows with the rows, since Arrow Java keeps no null count), except
     * where the vector's field is declared not nullable: the schema promises no nulls there.
     */
    REFUSE,
    /**
     * Take the values stored under nulls as they are (whatever the writer left there, often 0),
     * without reading the validity bitmaps: for data whose nulls are known to be absent or
     * meaningless. {@code of} then costs the same for any number of rows.
     */
    ACCEPT
}
