package io.github.dlpack4j;

import io.github.dlpack4j.abi.DLManagedTensor;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Run in a child JVM by {@link LifetimeTest}: {@link Dlpack#abandonLiveExports()} cannot be undone.
 * Prints each export's deleter after abandoning as {@code kept} (the deleter it had, a trampoline
 * that is off now) or {@code 0} (NULL, where there are no trampolines).
 */
public final class AbandonProbe {
    private static final long DELETER = Dlpack.deleter().address();

    private AbandonProbe() {}

    private static String deleter(MemorySegment p, boolean versioned) {
        long at = versioned ? DLManagedTensorVersioned.DELETER : DLManagedTensor.DELETER;
        long d = p.reinterpret(at + 8).get(ValueLayout.ADDRESS, at).address();
        return d == DELETER ? "kept" : Long.toString(d);
    }

    public static void main(String[] args) {
        Tensor x = Tensor.of(new double[] {1, 2});
        MemorySegment v = Dlpack.exportVersioned(x);
        MemorySegment pooled = Dlpack.exportVersioned(x); // the second export of a tensor comes from its pool
        MemorySegment pooledFree = Dlpack.exportVersioned(x);
        Exports.delete(pooledFree.address()); // back in the pool when the process lets go
        MemorySegment l = Dlpack.exportLegacy(x);
        Tensor z = Tensor.of(new double[512]);
        Exports.delete(Dlpack.exportVersioned(z).address());
        MemorySegment onlyPooled = Dlpack.exportVersioned(z); // z's one export out is a pooled one
        int n = Dlpack.abandonLiveExports();
        int liveAfter = Dlpack.liveExports();
        MemorySegment later = Dlpack.exportVersioned(x);
        Tensor y = Tensor.of(new int[] {3});
        Dlpack.exportLegacy(y);
        MemorySegment laterPool = Dlpack.exportLegacy(y); // a pool made after abandoning
        System.out.println("abandoned " + n + ", live after " + liveAfter + ", deleters " + deleter(v, true) + " "
                + deleter(pooled, true) + " " + deleter(l, false) + " " + deleter(onlyPooled, true)
                + ", later exports' deleters " + deleter(later, true) + " " + deleter(laterPool, false)
                + ", live " + Dlpack.liveExports());
        long bytes = Dlpack.nativeBytesInUse();
        z.close(); // its pool closes, but the abandoned export may still be read by a consumer outliving the JVM
        // At most the pool's free blocks go (with trampolines), never z's 4,096 bytes of data.
        System.out.println("memory of a tensor closed with an abandoned pooled export kept: "
                + (bytes - Dlpack.nativeBytesInUse() < 512 * 8));
        int live = Dlpack.liveExports();
        bytes = Dlpack.nativeBytesInUse();
        // A consumer that kept the deleter it read at import calls it now: nothing is freed.
        for (MemorySegment p : new MemorySegment[] {v, pooled, l, later}) {
            NativeMemory.callVoidFunction(MemorySegment.ofAddress(DELETER), p);
        }
        System.out.println("a late deleter call is ignored: " + (Dlpack.liveExports() == live && Dlpack.nativeBytesInUse() == bytes));
        x.close();
    }
}
