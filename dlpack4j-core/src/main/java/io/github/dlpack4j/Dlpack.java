package io.github.dlpack4j;

import java.lang.foreign.MemorySegment;

/**
 * Export of Java tensors as DLPack managed structs, and diagnostics of what is outstanding.
 *
 * <p>Each export is a struct of its own that shares the tensor's memory (no copy; a tensor exported
 * again and again reuses the structs whose deleters have run). The consumer owns
 * the struct and must call its deleter exactly once; the deleter may run on any thread, at any
 * time, and never throws into C. The tensor's memory stays allocated while any export is alive,
 * even after the tensor is {@linkplain Tensor#close() closed}.
 *
 * <p>For example:
 * {@snippet :
 * Tensor x = Tensor.of(new float[] {1, 2, 3});
 * MemorySegment ptr = Dlpack.exportVersioned(x);   // a DLManagedTensorVersioned* for a consumer
 * x.close();                                       // the export keeps the memory alive
 * // ... the consumer calls ptr's deleter when it is done; then:
 * ManagedTensor.adoptVersioned(ptr).close();      // (here Java itself is the consumer)
 * int outstanding = Dlpack.liveExports();          // 0
 * }
 */
public final class Dlpack {
    private Dlpack() {}

    /**
     * A new {@code DLManagedTensorVersioned*} (version 1.3) for {@code t}; {@code READ_ONLY} is set for
     * a read-only tensor.
     *
     * @param t the tensor to share; the export keeps its memory alive after {@code t} is closed
     * @return the struct, owned by the consumer, which must call its deleter exactly once
     * @throws IllegalStateException if {@code t} is closed
     */
    public static MemorySegment exportVersioned(Tensor t) {
        return Exports.export(t, true, 0);
    }

    /**
     * A new {@code DLManagedTensorVersioned*} for {@code t} with extra flags, {@link DlpackFlags#IS_COPIED}
     * and/or {@link DlpackFlags#READ_ONLY}, for producers that made {@code t} as a copy or want the
     * consumer not to write.
     *
     * @param t     the tensor to share; the export keeps its memory alive after {@code t} is closed
     * @param flags {@code IS_COPIED} and/or {@code READ_ONLY}, added to those {@code t} implies
     * @return the struct, owned by the consumer, which must call its deleter exactly once
     * @throws IllegalArgumentException for any other flag
     * @throws IllegalStateException    if {@code t} is closed
     */
    public static MemorySegment exportVersioned(Tensor t, long flags) {
        if ((flags & ~(DlpackFlags.IS_COPIED | DlpackFlags.READ_ONLY)) != 0) {
            throw new IllegalArgumentException("only IS_COPIED and READ_ONLY can be requested, got "
                    + DlpackFlags.toString(flags));
        }
        return Exports.export(t, true, flags);
    }

    /**
     * A new legacy {@code DLManagedTensor*} for {@code t}, for consumers older than DLPack 1.0. The
     * legacy struct has no flags, so read-only and padded sub-byte tensors cannot go out this way
     * (NumPy refuses the same with {@code BufferError}).
     *
     * @param t the tensor to share; the export keeps its memory alive after {@code t} is closed
     * @return the struct, owned by the consumer, which must call its deleter exactly once
     * @throws IllegalStateException if {@code t} is closed
     * @throws DlpackException       if {@code t} is read-only or holds padded sub-byte data
     */
    public static MemorySegment exportLegacy(Tensor t) {
        return Exports.export(t, false, 0);
    }

    /** {@return the number of exports whose deleter has not run yet} */
    public static int liveExports() {
        return Exports.liveCount();
    }

    /**
     * {@return bytes of native memory this library holds now} They count tensor data and export
     * structs (those a tensor keeps for reuse included, until it is closed or collected).
     */
    public static long nativeBytesInUse() {
        return NativeMemory.bytesInUse();
    }

    /**
     * Makes sure that no consumer's call of a deleter reaches the JVM from now on, for every live
     * export and every export made later, leaking their memory; returns how many were live: for a
     * host process that is about to destroy the JVM while consumers still hold exports (a Python
     * process with JPype at exit). On Linux x86-64 the deleter stays a valid function that now
     * returns at once, whether a consumer kept the pointer or calls what the struct says without
     * checking it (jaxlib checks it for NULL only when it imports); on other platforms every live
     * export's deleter, and that of every later export, becomes NULL, which consumers that check it
     * when they delete (NumPy, torch) skip. There is no undoing it.
     * {@code Python.attach()} arranges this by itself.
     *
     * @return the number of exports that were live, whose memory is now leaked on purpose
     */
    public static int abandonLiveExports() {
        return Exports.abandonAll();
    }

    /**
     * {@return the address of the deleter every export carries} On Linux x86-64 it stays a valid
     * function for the life of the process, also after the JVM is gone, when it returns at once.
     */
    public static MemorySegment deleter() {
        return Exports.DELETER;
    }
}
