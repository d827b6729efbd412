package io.github.dlpack4j;

import io.github.dlpack4j.abi.DLManagedTensor;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Run in a child JVM by {@link LifetimeTest}: {@link Dlpack#abandonLiveExports()} cannot be undone. */
public final class AbandonProbe {
    private AbandonProbe() {}

    private static long deleter(MemorySegment p, boolean versioned) {
        long at = versioned ? DLManagedTensorVersioned.DELETER : DLManagedTensor.DELETER;
        return p.reinterpret(at + 8).get(ValueLayout.ADDRESS, at).address();
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
        System.out.println("memory of a tensor closed with an abandoned pooled export kept: "
                + (Dlpack.nativeBytesInUse() == bytes));
        Exports.delete(v.address()); // a consumer that kept the old deleter pointer: nothing happens
        Exports.delete(pooled.address());
        x.close();
        System.out.println("a late delete call is ignored; live " + Dlpack.liveExports());
    }
}
