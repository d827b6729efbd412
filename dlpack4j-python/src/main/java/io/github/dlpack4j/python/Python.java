package io.github.dlpack4j.python;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The CPython interpreter of this process, embedded through FFM (no JNI).
 *
 * <p>{@link #start()} loads the libpython of a Python executable, chosen by the system property
 * {@code dlpack4j.python}, else the environment variable {@code DLPACK4J_PYTHON}, else {@code python3}
 * on the PATH (a venv's {@code bin/python} works: the interpreter then sees that venv's packages).
 * {@link #attach()} joins an interpreter already running in the process, as when Python (JPype)
 * started the JVM. There is one interpreter per process; it is never finalized.
 *
 * <p>Any platform thread may call any method at any time: each call takes the GIL for its own
 * duration only, so no Java thread holds it while idle and a long Python computation in one thread
 * does not stop Java threads that don't call Python. Virtual threads get a clear error. A batch of
 * calls runs faster in one {@link #withGil(Supplier) GIL scope}, where no call takes the GIL again.
 *
 * {@snippet :
 * Python py = Python.start();
 * try (PyObject np = py.importModule("numpy");
 *      PyObject a = np.callMethod("arange", 6)) {
 *     long total = a.callMethod("sum").asLong();   // 15
 * }
 * }
 */
public final class Python {
    private static final Object LOCK = new Object();
    private static volatile Python instance;
    private static volatile boolean shuttingDown;

    private final String version;
    private final String executable;
    private final MemorySegment globals;

    private Python(String version, String executable, MemorySegment globals) {
        this.version = version;
        this.executable = executable;
        this.globals = globals;
    }

    /**
     * Starts the embedded interpreter, or returns the one already running in this process.
     *
     * @throws IllegalStateException naming the fix when the JVM lacks {@code --enable-native-access},
     *                               the executable is missing or older than 3.10, its Python has no
     *                               shared library, or is a free-threaded build
     * @return the process's one interpreter
     */
    public static Python start() {
        return once(() -> {
            PythonLocator located = PythonLocator.locate(PythonLocator.configuredExecutable());
            NativeLibrary.bindPython(NativeLibrary.loadGlobal(located.library()));
            return initialize(located);
        });
    }

    /**
     * Joins the interpreter that already runs in this process (the JVM was started from Python,
     * e.g. by JPype), through the process's own symbols.
     *
     * @return the process's one interpreter
     * @throws IllegalStateException if no initialised CPython is loaded in the process, or it is
     *                               older than 3.10 or free-threaded
     */
    public static Python attach() {
        return once(Python::attachToProcess);
    }

    /** The process's one interpreter: {@code make} runs once, under the lock, after the access check. */
    private static Python once(Supplier<Python> make) {
        Python p = instance;
        if (p != null) {
            return p;
        }
        synchronized (LOCK) {
            if (instance == null) {
                checkNativeAccess();
                Python made = make.get();
                Py.checkObjectLayout();
                instance = made;
            }
            return instance;
        }
    }

    private static Python attachToProcess() {
        var process = NativeLibrary.process();
        MemorySegment isInit = process.find("Py_IsInitialized").orElseThrow(() -> new IllegalStateException(
                "no CPython in this process to attach to; use Python.start() to embed one"));
        MethodHandle h = Linker.nativeLinker().downcallHandle(isInit, FunctionDescriptor.of(java.lang.foreign.ValueLayout.JAVA_INT));
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
        Python p = Gil.with(() -> new Python(sysString("version"), sysString("executable"), mainGlobals()));
        String[] version = p.version.split("[. ]", 3); // "3.12.1 (main, ...)"
        PythonLocator.checkVersion(Integer.parseInt(version[0]), Integer.parseInt(version[1]), "the host process");
        installShutdownHook(false);
        HostExit.register(p); // the host's Python outlives this JVM: let go of it in time
        return p;
    }

    private static void checkNativeAccess() {
        if (!Python.class.getModule().isNativeAccessEnabled()) {
            throw new IllegalStateException("dlpack4j calls CPython through restricted FFM methods: start the JVM with "
                    + "--enable-native-access=" + (Python.class.getModule().isNamed()
                    ? Python.class.getModule().getName() : "ALL-UNNAMED")
                    + " (or put 'Enable-Native-Access: ALL-UNNAMED' in your jar's manifest)");
        }
    }

    private static Python initialize(PythonLocator located) {
        try {
            // PYTHONHOME makes the interpreter find the standard library of the executable's base
            // installation, whatever the JVM's PATH says; it is removed again right after. A
            // PYTHONHOME the user set is left as it is.
            if (!userSetPythonHome()) {
                Env.set("PYTHONHOME", located.basePrefix());
            }
            CApi.Py_InitializeEx.invokeExact(0); // 0: no signal handlers, the JVM owns signals
            Gil.keepInitialThreadState(); // a Java thread: its closes queue like any other's
            if (!userSetPythonHome()) {
                Env.unset("PYTHONHOME");
            }
        } catch (Throwable t) {
            throw Py.unchecked(t);
        }
        Python p;
        try {
            configureSys(located);
            p = new Python(sysString("version"), located.executable(), mainGlobals());
        } finally {
            try {
                MemorySegment ignored = (MemorySegment) CApi.PyEval_SaveThread.invokeExact(); // release the GIL
            } catch (Throwable t) {
                throw Py.unchecked(t);
            }
        }
        installShutdownHook(true);
        return p;
    }

    /** Makes sys.path, sys.prefix and sys.executable what the executable itself sees. */
    private static void configureSys(PythonLocator located) {
        MemorySegment sys = Py.importModule("sys");
        try {
            setAttr(sys, "path", located.path());
            setAttr(sys, "prefix", located.prefix());
            setAttr(sys, "exec_prefix", located.execPrefix());
            setAttr(sys, "executable", located.executable());
            if (userSetPythonHome()) {
                return;
            }
            MemorySegment os = Py.importModule("os");
            try (PyObject environ = PyObject.steal(Py.getAttr(os, "environ"))) {
                MemorySegment pop = Py.getAttr(environ.borrow(), "pop");
                MemorySegment args = Convert.tupleOf(new Object[] {"PYTHONHOME", null});
                try {
                    Py.decRef(Py.check((MemorySegment) CApi.PyObject_CallObject.invokeExact(pop, args)));
                } finally {
                    Py.decRef(args);
                    Py.decRef(pop);
                }
            } finally {
                Py.decRef(os);
            }
        } catch (Throwable t) {
            throw Py.unchecked(t);
        } finally {
            Py.decRef(sys);
        }
    }

    private static boolean userSetPythonHome() {
        return System.getenv("PYTHONHOME") != null;
    }

    private static void setAttr(MemorySegment o, String name, Object value) throws Throwable {
        MemorySegment v = Convert.toPython(value instanceof List<?> l ? l : value);
        try (Arena arena = Arena.ofConfined()) {
            Py.check((int) CApi.PyObject_SetAttrString.invokeExact(o, arena.allocateFrom(name), v));
        } finally {
            Py.decRef(v);
        }
    }

    /** {@code sys.<name>} as a string; needs the GIL. */
    private static String sysString(String name) {
        MemorySegment sys = Py.importModule("sys");
        try {
            MemorySegment v = Py.getAttr(sys, name);
            try {
                return Py.toJavaString(v);
            } finally {
                Py.decRef(v);
            }
        } finally {
            Py.decRef(sys);
        }
    }

    private static MemorySegment mainGlobals() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment main = Py.check((MemorySegment) CApi.PyImport_AddModule.invokeExact(arena.allocateFrom("__main__")));
            return Py.check((MemorySegment) CApi.PyModule_GetDict.invokeExact(main)); // borrowed, lives for ever
        } catch (Throwable t) {
            throw Py.unchecked(t);
        }
    }

    /** {@code embedded}: this JVM started the interpreter, and its exit ends the process. */
    private static void installShutdownHook(boolean embedded) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            shuttingDown = true;
            if (embedded) {
                EmbeddedExit.checkGilAtExit(); // every thread that may hold the GIL, ours included
                return;
            }
            // The JVM stops every thread where it is once the hooks are done: none of ours may be
            // holding the GIL then (see enterInternalHold). Holds are short; five seconds is a bound.
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (INTERNAL_HOLDS.get() != 0 && System.nanoTime() - deadline < 0) {
                LockSupport.parkNanos(1_000_000L);
            }
        }, "dlpack4j-python-shutdown"));
    }

    /** GIL holds that dlpack4j takes on its own account, in progress now. */
    private static final AtomicInteger INTERNAL_HOLDS = new AtomicInteger();

    /**
     * Begins a GIL hold that dlpack4j takes on its own account (the release flusher; a close that
     * runs queued deleters past the queue's bound), or says no once the JVM's shutdown began. The
     * shutdown hook waits for such holds to end: a thread stopped by the JVM's exit while it holds
     * the GIL would hang the host's Python. (A JVM that embeds Python waits, with a bound, for every
     * thread that takes the GIL through dlpack4j, these included: {@link EmbeddedExit}.)
     * The count is raised before the flag is read and the hook sets the flag before it reads the
     * count, so one of the two always sees the other.
     *
     * @return whether the hold may begin; if so, {@link #exitInternalHold()} must follow
     */
    static boolean enterInternalHold() {
        INTERNAL_HOLDS.incrementAndGet();
        if (shuttingDown) {
            INTERNAL_HOLDS.decrementAndGet();
            return false;
        }
        return true;
    }

    /** Ends a hold begun by {@link #enterInternalHold()}. */
    static void exitInternalHold() {
        INTERNAL_HOLDS.decrementAndGet();
    }

    /** From a host's exit on ({@link HostExit}): like the JVM's own shutdown, references are left alone. */
    static void markHostExit() {
        shuttingDown = true;
    }

    /** Whether the JVM is shutting down: references are then left to the process's end. */
    static boolean isShuttingDown() {
        return shuttingDown;
    }

    /** {@return {@code sys.version}} */
    public String version() {
        return version;
    }

    /** {@return {@code sys.executable}: the Python whose environment this interpreter sees} */
    public String executable() {
        return executable;
    }

    /**
     * Runs {@code body} with the GIL held by the calling thread for the whole of it, and returns what
     * it returns (PyO3's {@code Python::with_gil}). Every dlpack4j call inside (calls, conversions,
     * imports, exports, {@code close()} of a {@link PyObject} or of an imported tensor, whose
     * producer's deleter then runs at once) uses the GIL this thread holds instead of taking it:
     * a loop of calls or imports costs what the calls themselves cost.
     *
     * <p>Scopes nest (an inner one only counts), and the GIL is given back when the outermost one
     * ends, however it ends: an exception leaves the scope with the GIL released. Python code called
     * inside still lets other Python threads run now and then, as Python itself does, but Java code
     * inside does not: <b>blocking or long Java work inside a scope stops every other thread that
     * calls Python</b> (and waiting inside a scope for a thread that calls Python deadlocks). Let the
     * GIL go around such work with {@link #allowThreads}. End scopes before the JVM exits: when a daemon
     * thread is inside one, or {@code System.exit} is called inside one, the JVM still exits at once
     * with its exit status, but the process skips the native exit handlers of its libraries (torch's
     * would wait for ever for the GIL that the stopped thread holds) and says so on stderr.
     *
     * @param <T>  what {@code body} computes
     * @param body the work to run holding the GIL
     * @return what {@code body} returned
     * @throws IllegalStateException on a virtual thread (it may change OS threads while holding the
     *                               GIL); nothing is run then
     */
    public <T> T withGil(Supplier<T> body) {
        Objects.requireNonNull(body, "body");
        return Gil.scope(body);
    }

    /**
     * {@link #withGil(Supplier)} for a body without a result.
     *
     * @param body the work to run holding the GIL
     * @throws IllegalStateException on a virtual thread; nothing is run then
     */
    public void withGil(Runnable body) {
        Objects.requireNonNull(body, "body");
        Gil.scope(() -> {
            body.run();
            return null;
        });
    }

    /**
     * Runs {@code body} with the GIL let go, if this thread holds it (inside {@link #withGil}, or in
     * Java code that Python called), and takes it back after, with the same thread state, however
     * {@code body} ends ({@code Py_BEGIN_ALLOW_THREADS} / {@code Py_END_ALLOW_THREADS}). Other threads
     * call Python meanwhile; dlpack4j calls inside {@code body} take the GIL for themselves, as
     * outside any scope. On a thread that does not hold the GIL it just runs {@code body}.
     *
     * @param body the work to run without the GIL
     */
    public void allowThreads(Runnable body) {
        Objects.requireNonNull(body, "body");
        Gil.allowThreads(body);
    }

    /**
     * Runs statements in the {@code __main__} module.
     *
     * @param code Python source, as in a file
     * @throws PythonException what the code raised
     */
    public void exec(String code) {
        run(code, CApi.Py_file_input).close();
    }

    /**
     * Evaluates an expression in the {@code __main__} module.
     *
     * @param expression one Python expression
     * @return a new reference to its value
     * @throws PythonException what the expression raised
     */
    public PyObject eval(String expression) {
        return run(expression, CApi.Py_eval_input);
    }

    private PyObject run(String code, int mode) {
        int g = Gil.acquire();
        try (Arena arena = Arena.ofConfined()) {
            return PyObject.stealChecked((MemorySegment) CApi.PyRun_String.invokeExact(
                    arena.allocateFrom(code), mode, globals, globals));
        } catch (Throwable t) {
            throw Py.unchecked(t);
        } finally {
            Gil.release(g);
        }
    }

    /**
     * {@code import name}, e.g. {@code "numpy"} or {@code "os.path"}.
     *
     * @param name the module's dotted name
     * @return a new reference to the module
     * @throws PythonException (a {@code ModuleNotFoundError}, say) if the import fails
     */
    public PyObject importModule(String name) {
        return Gil.with(() -> {
            return PyObject.steal(Py.importModule(name));
        });
    }

    /**
     * Binds {@code name} in {@code __main__} to {@code value}, converted as {@link #toPython}.
     *
     * @param name  the global variable's name
     * @param value a Java value or a {@link PyObject}
     */
    public void setGlobal(String name, Object value) {
        Gil.with(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment v = Convert.toPython(value);
                try {
                    Py.check((int) CApi.PyDict_SetItemString.invokeExact(globals, arena.allocateFrom(name), v));
                } finally {
                    Py.decRef(v);
                }
            }
            return null;
        });
    }

    /**
     * The value of {@code name} in {@code __main__}.
     *
     * @param name the global variable's name
     * @return a new reference to its value
     * @throws PythonException (a {@code NameError}) if it is not bound
     */
    public PyObject getGlobal(String name) {
        return Gil.with(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment v = (MemorySegment) CApi.PyDict_GetItemString.invokeExact(globals, arena.allocateFrom(name));
                if (v.address() == 0) {
                    throw new PythonException("NameError", "name '" + name + "' is not defined");
                }
                Py.incRef(v);
                return PyObject.steal(v);
            }
        });
    }

    /**
     * A Python object for a Java value: null → None, Boolean → bool, Byte/Short/Integer/Long/BigInteger
     * → int, Float/Double → float, String → str, byte[] → bytes, List/Collection/Object[] → list,
     * Map → dict (recursively), PyObject → the same object.
     *
     * @param value the Java value
     * @return a new reference to the Python object
     */
    public PyObject toPython(Object value) {
        return Gil.with(() -> {
            return PyObject.steal(Convert.toPython(value));
        });
    }

    /**
     * A Python callable ({@code java_function} to Python) that runs {@code fn}; see {@link PythonFunction}.
     *
     * @param fn the Java code to run on each call; kept as long as the callable lives
     * @return a new reference to the callable
     */
    public PyObject function(PythonFunction fn) {
        return Gil.with(() -> {
            return PyObject.steal(JavaFunctions.create(fn));
        });
    }
}
