package io.github.dlpack4j.bench;

import io.github.dlpack4j.internal.SafetyNet;
import java.lang.ref.Cleaner;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * The safety net under every owning handle, registered and cleaned on one thread, as an import
 * closed where it was made does: dlpack4j's {@code SafetyNet} against the JDK's {@link Cleaner},
 * which it replaced, and the allocation of the referent alone.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@Fork(jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class SafetyNetBench {
    private static final Cleaner CLEANER = Cleaner.create();
    private static final Runnable NOTHING = () -> { };

    /** The referent alone: what the two below cost beyond it is the registration and its clean. */
    @Benchmark
    public Object referentOnly() {
        return new Object[2];
    }

    /** {@code Cleaner.register} + {@code clean()}: two monitor round trips on the cleaner's list. */
    @Benchmark
    public Object cleanerRegisterThenClean() {
        Object referent = new Object[2];
        CLEANER.register(referent, NOTHING).clean();
        return referent;
    }

    /** {@code SafetyNet.register} + {@code clean()}: a slot of this thread's table, one compare-and-set. */
    @Benchmark
    public Object safetyNetRegisterThenClean() {
        Object referent = new Object[2];
        SafetyNet.register(referent, NOTHING).clean();
        return referent;
    }
}
