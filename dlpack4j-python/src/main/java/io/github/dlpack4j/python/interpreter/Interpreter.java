package io.github.dlpack4j.python.interpreter;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.function.Supplier;

/**
 * The life cycle of the process's one CPython: located, loaded and initialised by {@link #start()}
 * (the JVM embeds Python), or joined by {@link #attach()} (Python hosts the JVM). It is never
 * finalized, and no sub-interpreter is ever made.
 *
 * @param version    {@code sys.version}
 * @param executable {@code sys.executable}
 * @param globals    the dict of {@code __main__}, borrowed (it lives for ever)
 */
public record Interpreter(String version, String executable, MemorySegment globals) {
    private static final Object LOCK = new Object();
    private static volatile Interpreter instance;

    /**
     * Starts the embedded interpreter, or returns the one already running in this process.
     *
     * @return the process's one interpreter
     * @throws IllegalStateException naming the fix when the JVM lacks native access, the executable
     *                               is missing or older than 3.10, has no shared library, or is
     *                               a free-threaded build
     */
    public static Interpreter start() {
        return once(() -> {
            PythonLocator located = PythonLocator.locate(PythonLocator.configuredExecutable());
            NativeLibrary.bindPython(NativeLibrary.loadGlobal(located.library()));
            return initialize(located);
        });
    }

    /**
     * Joins the interpreter that already runs in this process (the JVM was started from Python,
     * e.g. by JPype), through the process's own symbols, and arranges {@link HostedJvmExit}.
     *
     * @return the process's one interpreter
     * @throws IllegalStateException if no initialised CPython is loaded in the process, or it is
     *                               older than 3.10 or free-threaded
     */
    public static Interpreter attach() {
        return once(Interpreter::attachToProcess);
    }

    /** The process's one interpreter: {@code make} runs once, under the lock, after the access check. */
    private static Interpreter once(Supplier<Interpreter> make) {
        Interpreter p = instance;
        if (p != null) {
            return p;
        }
        synchronized (LOCK) {
            if (instance == null) {
                checkNativeAccess();
                Interpreter made = make.get();
                CpythonLayout.checkObjectHeader();
                Refs.countInJava(made.minorVersion(), Gil.with(() -> sysHas("gettotalrefcount")));
                instance = made;
            }
            return instance;
        }
    }

    /** {@return the major version, from {@code sys.version} ("3.12.1 (main, ...)")} */
    int majorVersion() {
        return Integer.parseInt(version.split("[. ]", 3)[0]);
    }

    /** {@return the minor version, from {@code sys.version} ("3.12.1 (main, ...)")} */
    int minorVersion() {
        return Integer.parseInt(version.split("[. ]", 3)[1]);
    }

    /** Whether {@code sys} has the attribute {@code name}; needs the GIL. */
    private static boolean sysHas(String name) {
        MemorySegment sys = Names.importModule("sys");
        try (Arena arena = Arena.ofConfined()) {
            return (int) CApi.PyObject_HasAttrString.invokeExact(sys, arena.allocateFrom(name)) == 1;
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        } finally {
            Refs.decRef(sys);
        }
    }

    private static Interpreter attachToProcess() {
        var process = NativeLibrary.process();
        MemorySegment isInit = process.find("Py_IsInitialized").orElseThrow(() -> new IllegalStateException(
                "no CPython in this process to attach to; use Python.start() to embed one"));
        MethodHandle h = Linker.nativeLinker().downcallHandle(isInit, FunctionDescriptor.of(ValueLayout.JAVA_INT));
        try {
            if ((int) h.invokeExact() == 0) {
                throw new IllegalStateException("CPython is loaded in this process but not initialised; use Python.start()");
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        NativeLibrary.bindPython(process);
        Interpreter p = Gil.with(() -> new Interpreter(sysString("version"), sysString("executable"), mainGlobals()));
        PythonLocator.checkVersion(p.majorVersion(), p.minorVersion(), "the host process");
        Shutdown.installHook(false);
        Gil.with(() -> {
            HostedJvmExit.register(); // the host's Python outlives this JVM: let go of it in time
            return null;
        });
        return p;
    }

    private static void checkNativeAccess() {
        Module module = Interpreter.class.getModule();
        if (!module.isNativeAccessEnabled()) {
            throw new IllegalStateException("dlpack4j calls CPython through restricted FFM methods: start the JVM with "
                    + "--enable-native-access=" + (module.isNamed() ? module.getName() : "ALL-UNNAMED")
                    + " (or put 'Enable-Native-Access: ALL-UNNAMED' in your jar's manifest)");
        }
    }

    private static Interpreter initialize(PythonLocator located) {
        try {
            // PYTHONHOME makes the interpreter find the standard library of the executable's base
            // installation, whatever the JVM's PATH says; it is removed again right after. A
            // PYTHONHOME the user set is left as it is.
            if (!userSetPythonHome()) {
                ProcessEnvironment.set("PYTHONHOME", located.basePrefix());
            }
            CApi.Py_InitializeEx.invokeExact(0); // 0: no signal handlers, the JVM owns signals
            Gil.keepInitialThreadState(); // a Java thread: its closes queue like any other's
            if (!userSetPythonHome()) {
                ProcessEnvironment.unset("PYTHONHOME");
            }
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
        Interpreter p;
        try {
            configureSys(located);
            p = new Interpreter(sysString("version"), located.executable(), mainGlobals());
        } finally {
            try {
                MemorySegment ignored = (MemorySegment) CApi.PyEval_SaveThread.invokeExact(); // release the GIL
            } catch (Throwable t) {
                throw PyErrors.unchecked(t);
            }
        }
        Shutdown.installHook(true);
        return p;
    }

    /** Makes sys.path, sys.prefix and sys.executable what the executable itself sees. */
    private static void configureSys(PythonLocator located) {
        MemorySegment sys = Names.importModule("sys");
        try {
            setAttr(sys, "path", located.path());
            setAttr(sys, "prefix", located.prefix());
            setAttr(sys, "exec_prefix", located.execPrefix());
            setAttr(sys, "executable", located.executable());
            if (userSetPythonHome()) {
                return;
            }
            MemorySegment os = Names.importModule("os");
            MemorySegment environ = MemorySegment.NULL;
            try {
                environ = Names.getAttr(os, "environ");
                MemorySegment pop = Names.getAttr(environ, "pop");
                MemorySegment args = Convert.tupleOf(new Object[] {"PYTHONHOME", null});
                try {
                    Refs.decRef(PyErrors.check((MemorySegment) CApi.PyObject_CallObject.invokeExact(pop, args)));
                } finally {
                    Refs.decRef(args);
                    Refs.decRef(pop);
                }
            } finally {
                if (environ.address() != 0) {
                    Refs.decRef(environ);
                }
                Refs.decRef(os);
            }
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        } finally {
            Refs.decRef(sys);
        }
    }

    private static boolean userSetPythonHome() {
        return System.getenv("PYTHONHOME") != null;
    }

    private static void setAttr(MemorySegment o, String name, Object value) throws Throwable {
        MemorySegment v = Convert.toPython(value instanceof List<?> l ? l : value);
        try (Arena arena = Arena.ofConfined()) {
            PyErrors.check((int) CApi.PyObject_SetAttrString.invokeExact(o, arena.allocateFrom(name), v));
        } finally {
            Refs.decRef(v);
        }
    }

    /** {@code sys.<name>} as a string; needs the GIL. */
    private static String sysString(String name) {
        MemorySegment sys = Names.importModule("sys");
        try {
            MemorySegment v = Names.getAttr(sys, name);
            try {
                return Convert.toJavaString(v);
            } finally {
                Refs.decRef(v);
            }
        } finally {
            Refs.decRef(sys);
        }
    }

    private static MemorySegment mainGlobals() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment main = PyErrors.check((MemorySegment) CApi.PyImport_AddModule.invokeExact(arena.allocateFrom("__main__")));
            return PyErrors.check((MemorySegment) CApi.PyModule_GetDict.invokeExact(main)); // borrowed, lives for ever
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }
}
