package io.github.dlpack4j.internal;

import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Trampolines called the way C calls them (through a downcall of their address): they reach their
 * Java target with every argument while armed, and return at once without it once disarmed.
 */
class TrampolineTest {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final List<Long> DELETED = new CopyOnWriteArrayList<>();

    @BeforeEach
    void onlyWhereTrampolinesAreMade() {
        assumeTrue(Trampoline.outlivesTheJvm(), "trampolines are made on Linux x86-64 only");
        DELETED.clear();
    }

    /** A deleter's Java side: records the struct it was called for. */
    static void delete(long self) {
        DELETED.add(self);
    }

    /** Eight integer arguments (the last two on the stack in the C ABI) and two floating-point ones. */
    static long mix(long a, long b, long c, long d, long e, long f, long g, long h, double x, double y) {
        return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + (long) (x * 10) + (long) (y * 100);
    }

    static int answer(long unused) {
        return 42;
    }

    static double half(long x) {
        return x / 2.0;
    }

    private static MethodHandle target(String name, Class<?> returns, Class<?>... parameters) throws ReflectiveOperationException {
        return MethodHandles.lookup().findStatic(TrampolineTest.class, name, MethodType.methodType(returns, parameters));
    }

    private static Trampoline deleter() throws ReflectiveOperationException {
        return Trampoline.release(target("delete", void.class, long.class), FunctionDescriptor.ofVoid(JAVA_LONG));
    }

    @Test
    void aDeleterCalledThroughItsTrampolineReachesJavaWhileArmedAndDoesNothingOnceDisarmed() throws Throwable {
        Trampoline t = deleter();
        MethodHandle call = LINKER.downcallHandle(t.address(), FunctionDescriptor.ofVoid(JAVA_LONG));
        call.invokeExact(0x1234L);
        assertThat(DELETED).containsExactly(0x1234L);

        t.disarm();
        call.invokeExact(0x5678L);
        call.invokeExact(0x5678L);
        assertThat(DELETED).as("a disarmed trampoline returns without calling Java").containsExactly(0x1234L);
    }

    @Test
    void everyArgumentAndTheResultPassThroughUnchangedStackArgumentsIncluded() throws Throwable {
        FunctionDescriptor d = FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG,
                JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_DOUBLE, JAVA_DOUBLE);
        Trampoline t = Trampoline.call(target("mix", long.class, long.class, long.class, long.class, long.class,
                long.class, long.class, long.class, long.class, double.class, double.class), d, 0);
        long got = (long) LINKER.downcallHandle(t.address(), d).invokeExact(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 0.5, 0.25);
        assertThat(got).isEqualTo(mix(1, 2, 3, 4, 5, 6, 7, 8, 0.5, 0.25));
    }

    @Test
    void aDisarmedCallReturnsTheResultItWasMadeWith() throws Throwable {
        FunctionDescriptor d = FunctionDescriptor.of(JAVA_INT, JAVA_LONG);
        Trampoline t = Trampoline.call(target("answer", int.class, long.class), d, -1);
        MethodHandle call = LINKER.downcallHandle(t.address(), d);
        assertThat((int) call.invokeExact(7L)).isEqualTo(42);
        t.disarm();
        assertThat((int) call.invokeExact(7L)).as("the C convention for an error").isEqualTo(-1);
    }

    @Test
    void aFunctionWithAFloatingPointResultIsRefusedForItsResultWhenOffWouldGoElsewhere() {
        assertThatThrownBy(() -> Trampoline.call(target("half", double.class, long.class),
                FunctionDescriptor.of(JAVA_DOUBLE, JAVA_LONG), 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void trampolinesBeyondTheFirstPageWorkAsTheFirst() throws Throwable {
        List<Trampoline> made = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            made.add(deleter());
        }
        for (int i = 0; i < made.size(); i++) {
            LINKER.downcallHandle(made.get(i).address(), FunctionDescriptor.ofVoid(JAVA_LONG)).invokeExact((long) i);
        }
        assertThat(DELETED).hasSize(200).doesNotHaveDuplicates();
        assertThat(made.stream().map(t -> t.address().address()).distinct()).hasSize(200);
    }

    @Test
    void theCodeIsReadableAndExecutableButNeverWritable() throws Exception {
        // Not the JVM's code cache either (rwxp), which may be gone when C calls the function.
        assertThat(permissionsAt(deleter().address().address())).isEqualTo("r-xp");
    }

    /** The permissions {@code /proc/self/maps} gives the mapping that holds {@code address}. */
    private static String permissionsAt(long address) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            String[] fields = line.split("\\s+");
            String[] range = fields[0].split("-");
            long from = HexFormat.fromHexDigitsToLong(range[0]);
            long to = HexFormat.fromHexDigitsToLong(range[1]);
            if (Long.compareUnsigned(address, from) >= 0 && Long.compareUnsigned(address, to) < 0) {
                return fields[1];
            }
        }
        throw new AssertionError("no mapping holds 0x" + Long.toHexString(address));
    }
}
