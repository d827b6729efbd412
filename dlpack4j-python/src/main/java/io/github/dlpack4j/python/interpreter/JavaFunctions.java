package io.github.dlpack4j.python.interpreter;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.github.dlpack4j.internal.Trampoline;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.PythonFunction;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Python callables backed by {@link PythonFunction}s: one {@code PyMethodDef} and one upcall stub for
 * the process, with the function's id in the callable's {@code self}, so no Java
 * object address ever reaches C. The id sits in a capsule whose destructor forgets the function.
 * Both functions are {@link Trampoline}s: called after the JVM is gone, the callable raises
 * {@code SystemError} (a NULL result without an exception) and the destructor does nothing.
 */
public final class JavaFunctions {
    /** A live function and its {@code self} capsule. */
    private record Entry(PythonFunction fn, long capsule) {}

    private static final ConcurrentHashMap<Long, Entry> FUNCTIONS = new ConcurrentHashMap<>();
    private static final AtomicLong IDS = new AtomicLong();
    private static final MemorySegment METHOD_DEF;
    private static final MemorySegment CAPSULE_DESTRUCTOR;

    static {
        try {
            CAPSULE_DESTRUCTOR = Trampoline.release(MethodHandles.lookup().findStatic(JavaFunctions.class, "forget",
                    MethodType.methodType(void.class, MemorySegment.class)), FunctionDescriptor.ofVoid(ADDRESS)).address();
            MemorySegment stub = Trampoline.call(MethodHandles.lookup().findStatic(JavaFunctions.class, "invoke",
                    MethodType.methodType(MemorySegment.class, MemorySegment.class, MemorySegment.class)),
                    FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS), 0).address();
            // struct PyMethodDef { const char* ml_name; PyCFunction ml_meth; int ml_flags; const char* ml_doc; }
            METHOD_DEF = Arena.global().allocate(32, 8);
            METHOD_DEF.set(ADDRESS, 0, Arena.global().allocateFrom("java_function"));
            METHOD_DEF.set(ADDRESS, 8, stub);
            METHOD_DEF.set(JAVA_INT, 16, CpythonLayout.METH_VARARGS);
            METHOD_DEF.set(ADDRESS, 24, Arena.global().allocateFrom("A Java function (dlpack4j)."));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private JavaFunctions() {}

    /** A new Python callable for {@code fn}; needs the GIL. The function lives as long as the callable. */
    public static MemorySegment create(PythonFunction fn) {
        long id = IDS.incrementAndGet();
        try {
            // The capsule's destructor forgets the function when Python frees the callable.
            MemorySegment self = PyErrors.check((MemorySegment) CApi.PyCapsule_New.invokeExact(
                    MemorySegment.ofAddress(id), MemorySegment.NULL, CAPSULE_DESTRUCTOR));
            FUNCTIONS.put(id, new Entry(fn, self.address()));
            if (Shutdown.isShuttingDown()) {
                Refs.incRef(self); // made after the host let go of Java (HostedJvmExit): never to be freed
            }
            try {
                return PyErrors.check((MemorySegment) CApi.PyCFunction_NewEx.invokeExact(METHOD_DEF, self, MemorySegment.NULL));
            } finally {
                Refs.decRef(self);
            }
        } catch (Throwable t) {
            FUNCTIONS.remove(id);
            throw PyErrors.unchecked(t);
        }
    }

    /**
     * Keeps every live function's capsule alive for good, so that Python never runs its destructor
     * (an upcall): for a host that destroys the JVM before Python frees them. Needs the GIL.
     */
    static int keepAllAlive() {
        int n = 0;
        for (Entry e : FUNCTIONS.values()) {
            Refs.incRef(MemorySegment.ofAddress(e.capsule()));
            n++;
        }
        return n;
    }

    /** The capsule destructor: never throws into C. */
    private static void forget(MemorySegment capsule) {
        try {
            FUNCTIONS.remove(((MemorySegment) CApi.PyCapsule_GetPointer.invokeExact(capsule, MemorySegment.NULL)).address());
        } catch (Throwable ignored) {
            try {
                PyErrors.clearError(); // a leaked map entry is all that can go wrong here
            } catch (Throwable alsoIgnored) {
                // nothing may reach C
            }
        }
    }

    /** The upcall, with the GIL held: nothing thrown here may reach C, or the JVM dies. */
    private static MemorySegment invoke(MemorySegment self, MemorySegment args) {
        try {
            long id = ((MemorySegment) CApi.PyCapsule_GetPointer.invokeExact(self, MemorySegment.NULL)).address();
            Entry entry = FUNCTIONS.get(id);
            PythonFunction fn = entry == null ? null : entry.fn();
            if (fn == null) {
                throw new IllegalStateException("Java function " + id + " is gone");
            }
            long n = PyErrors.checkSize((long) CApi.PySequence_Size.invokeExact(args));
            PyObject[] javaArgs = new PyObject[(int) n];
            for (int i = 0; i < n; i++) {
                javaArgs[i] = PyObjects.stealChecked((MemorySegment) CApi.PySequence_GetItem.invokeExact(args, (long) i));
            }
            Object result = fn.call(javaArgs);
            return Convert.toPython(result);
        } catch (Throwable t) {
            PyErrors.raise(t);
            return MemorySegment.NULL;
        }
    }
}
