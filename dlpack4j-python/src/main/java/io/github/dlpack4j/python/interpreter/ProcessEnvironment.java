package io.github.dlpack4j.python.interpreter;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;

/** The C process environment, which CPython reads at start-up (Java's {@code System.getenv} is a copy). */
final class ProcessEnvironment {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle SETENV = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("setenv"),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    private static final MethodHandle UNSETENV = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("unsetenv"),
            FunctionDescriptor.of(JAVA_INT, ADDRESS));

    private ProcessEnvironment() {}

    static void set(String name, String value) {
        try (Arena arena = Arena.ofConfined()) {
            int ignored = (int) SETENV.invokeExact(arena.allocateFrom(name), arena.allocateFrom(value), 1);
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }

    static void unset(String name) {
        try (Arena arena = Arena.ofConfined()) {
            int ignored = (int) UNSETENV.invokeExact(arena.allocateFrom(name));
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }
}
