package io.github.dlpack4j.python;

import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.Convert;
import io.github.dlpack4j.python.interpreter.Gil;
import io.github.dlpack4j.python.interpreter.Interpreter;
import io.github.dlpack4j.python.interpreter.JavaFunctions;
import io.github.dlpack4j.python.interpreter.Names;
import io.github.dlpack4j.python.interpreter.PyErrors;
import io.github.dlpack4j.python.interpreter.PythonThreads;
import io.github.dlpack4j.python.interpreter.Refs;
import io.github.dlpack4j.python.protocol.HostDetachSteps;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * The CPython interpreter of this process, embedded through FFM (no JNI).
 *
 * <p>{@link #start()} loads the libpython of a Python executable, chosen by the system property
 * {@code dlpack4j.python}, else the environment variable {@code DLPACK4J_PYTHON}, else {@code python3}
 * on the PATH (a venv's {@code bin/python} works: the interpreter then sees that venv's packages).
 * {@link #attach()} joins an interpreter already running in the process, as when Python (JPype)
 * started the JVM. There is one interpreter per process; it is never finalized.
 *
 * <p>Any thread may call any method at any time: each call takes the GIL for its own duration only,
 * so no Java thread holds it while idle and a long Python computation in one thread does not stop
 * Java threads that don't call Python. A platform thread calls Python itself. A virtual thread's
 * call, or its whole {@link #withGil(Supplier) GIL scope}, runs on one of a few platform threads
 * that the runtime keeps for them ({@code dlpack4j-python-N}; their number is the system property
 * {@code dlpack4j.python.threads}, else the processor count between 2 and 8), while the virtual
 * thread waits without pinning its carrier: results, exceptions and tensors come back as from a
 * direct call, without copies. A batch of calls runs faster in one GIL scope, where no call takes
 * the GIL again.
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
    private static volatile Python instance;

    private final Interpreter interpreter;

    private Python(Interpreter interpreter) {
        this.interpreter = interpreter;
    }

    /** The one {@code Python} of the process's one interpreter. */
    private static Python of(Interpreter interpreter) {
        Python p = instance;
        if (p == null) {
            synchronized (Python.class) {
                if (instance == null) {
                    instance = new Python(interpreter);
                }
                p = instance;
            }
        }
        return p;
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
        if (Thread.currentThread().isVirtual()) { // the interpreter's first thread state stays with its thread
            return PythonThreads.callUnchecked(Python::start);
        }
        return of(Interpreter.start());
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
        if (Thread.currentThread().isVirtual()) {
            return PythonThreads.callUnchecked(Python::attach);
        }
        HostDetachSteps.register(); // before the host can exit: what the DLPack side lets go of then
        return of(Interpreter.attach());
    }

    /** {@return {@code sys.version}} */
    public String version() {
        return interpreter.version();
    }

    /** {@return {@code sys.executable}: the Python whose environment this interpreter sees} */
    public String executable() {
        return interpreter.executable();
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
     *
     * <p>On a virtual thread the whole body runs on one of the runtime's platform threads (a virtual
     * thread may change OS threads, and the GIL belongs to one), which the virtual thread waits for;
     * inside the body, {@code Thread.currentThread()} is that platform thread.
     */
    public <T> T withGil(Supplier<T> body) {
        Objects.requireNonNull(body, "body");
        return Gil.scope(body);
    }

    /**
     * {@link #withGil(Supplier)} for a body without a result.
     *
     * @param body the work to run holding the GIL
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
        if (Thread.currentThread().isVirtual()) {
            return PythonThreads.callUnchecked(() -> run(code, mode));
        }
        int g = Gil.acquire();
        try (Arena arena = Arena.ofConfined()) {
            return PyObject.stealChecked((MemorySegment) CApi.PyRun_String.invokeExact(
                    arena.allocateFrom(code), mode, interpreter.globals(), interpreter.globals()));
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
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
            return PyObject.steal(Names.importModule(name));
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
                    PyErrors.check((int) CApi.PyDict_SetItemString.invokeExact(interpreter.globals(), arena.allocateFrom(name), v));
                } finally {
                    Refs.decRef(v);
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
                MemorySegment v = (MemorySegment) CApi.PyDict_GetItemString.invokeExact(interpreter.globals(), arena.allocateFrom(name));
                if (v.address() == 0) {
                    throw new PythonException("NameError", "name '" + name + "' is not defined");
                }
                Refs.incRef(v);
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
