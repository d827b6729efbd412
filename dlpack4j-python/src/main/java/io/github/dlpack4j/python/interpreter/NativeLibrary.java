package io.github.dlpack4j.python.interpreter;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Optional;

/**
 * libpython's symbols, through {@code dlopen}/{@code dlsym}.
 *
 * <p>Why not {@code SymbolLookup.libraryLookup}: it loads with {@code RTLD_LOCAL}, and then the
 * extension modules that Python loads later (numpy's, torch's) cannot resolve {@code PyExc_*} and
 * the rest of the C API against it. {@code RTLD_GLOBAL} makes libpython's symbols visible to them.
 */
public final class NativeLibrary {
    private static final int RTLD_NOW = 2;
    private static final int RTLD_GLOBAL = 0x100;
    private static final int RTLD_NOLOAD = 4;
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle DLOPEN = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("dlopen"), FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT));
    private static final MethodHandle DLSYM = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("dlsym"), FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    private static final MethodHandle DLERROR = LINKER.downcallHandle(
            LINKER.defaultLookup().findOrThrow("dlerror"), FunctionDescriptor.of(ADDRESS));

    private static volatile SymbolLookup python;

    private NativeLibrary() {}

    /** Makes {@code lookup} the source of CPython's symbols, once, before {@link CApi} is used. */
    static synchronized void bindPython(SymbolLookup lookup) {
        if (python == null) {
            python = lookup;
        }
    }

    /** The lookup bound by {@link #bindPython}. */
    static SymbolLookup python() {
        SymbolLookup l = python;
        if (l == null) {
            throw new IllegalStateException("Python is not started: call Python.start() or Python.attach() first");
        }
        return l;
    }

    /** Loads {@code path} with {@code RTLD_NOW | RTLD_GLOBAL}; symbols are looked up in it. */
    static SymbolLookup loadGlobal(Path path) {
        MemorySegment handle;
        try (Arena arena = Arena.ofConfined()) {
            handle = (MemorySegment) DLOPEN.invokeExact(arena.allocateFrom(path.toString()), RTLD_NOW | RTLD_GLOBAL);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (handle.address() == 0) {
            throw new IllegalStateException("dlopen(" + path + ") failed: " + lastError());
        }
        return lookupIn(handle);
    }

    /**
     * The symbols of {@code path} if the process has loaded that library already ({@code RTLD_NOLOAD}:
     * nothing new is ever loaded); empty if it has not.
     */
    public static Optional<SymbolLookup> loaded(Path path) {
        MemorySegment handle;
        try (Arena arena = Arena.ofConfined()) {
            handle = (MemorySegment) DLOPEN.invokeExact(arena.allocateFrom(path.toString()), RTLD_NOW | RTLD_NOLOAD);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        return handle.address() == 0 ? Optional.empty() : Optional.of(lookupIn(handle));
    }

    /** The symbols already loaded in the process (the executable and every global library). */
    static SymbolLookup process() {
        return lookupIn(MemorySegment.NULL); // RTLD_DEFAULT
    }

    private static SymbolLookup lookupIn(MemorySegment handle) {
        return name -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment p = (MemorySegment) DLSYM.invokeExact(handle, arena.allocateFrom(name));
                return p.address() == 0 ? Optional.empty() : Optional.of(p);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        };
    }

    private static String lastError() {
        try {
            MemorySegment e = (MemorySegment) DLERROR.invokeExact();
            return e.address() == 0 ? "unknown error" : e.reinterpret(4096).getString(0);
        } catch (Throwable t) {
            return t.toString();
        }
    }
}
