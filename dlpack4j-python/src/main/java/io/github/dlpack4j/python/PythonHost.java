package io.github.dlpack4j.python;

import io.github.dlpack4j.DlpackExporter;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.interpreter.Gil;
import io.github.dlpack4j.python.interpreter.Refs;
import io.github.dlpack4j.python.protocol.JavaTensorType;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * The entry points of the Python package {@code dlpack4j}, for a JVM that Python hosts (JPype). Its
 * functions call these through JPype; Java code has {@link PythonDlpack} and {@link ImportRequest}.
 *
 * <p>Python objects cross as addresses ({@code id(x)} in CPython), since JPype does not know
 * dlpack4j's {@link PyObject}: {@link #importObject} borrows one that the calling Python frame keeps
 * alive, and {@link #exporterObject} and {@link #exceptionObject} return a new reference that the
 * caller takes over. Each call takes the GIL itself (JPype releases it around every Java call).
 */
public final class PythonHost {
    private PythonHost() {}

    /**
     * Attaches dlpack4j to the interpreter that hosts this JVM ({@link Python#attach()}); idempotent.
     *
     * @return the interpreter's {@code sys.version}, for the Python side to check it found the right one
     */
    public static String attach() {
        return Python.attach().version();
    }

    /**
     * Imports the DLPack producer (an array, a tensor or a DLPack capsule) at {@code pyObject} into a
     * tensor that owns the import: zero-copy over the producer's memory, read-only when the producer
     * says so. Closing it (or the {@code Cleaner}, for one never closed) runs the producer's deleter.
     *
     * @param pyObject the object's address; the caller keeps the object alive during the call
     * @param copy     {@code TRUE}: always copy, {@code FALSE}: never, null: only if needed
     * @return an owning tensor; the caller closes it
     * @throws PythonException the producer's own error, with its Python type (see {@link #exceptionObject})
     * @throws io.github.dlpack4j.DlpackException the object does not speak DLPack, or its tensor breaks the rules
     */
    public static Tensor importObject(long pyObject, Boolean copy) {
        checkAddress(pyObject);
        // A scope, so that the import inside finds the GIL held instead of taking it again.
        return Gil.scope(() -> {
            MemorySegment o = MemorySegment.ofAddress(pyObject);
            Refs.incRef(o);
            try (PyObject source = PyObject.steal(o); ManagedTensor m = ImportRequest.of(source).copy(copy).importTensor()) {
                // The share owns the producer's memory now; closing m only drops its own hold.
                return m.tensor().share();
            }
        });
    }

    /**
     * A new reference to a {@code dlpack4j.Tensor} Python object for {@code exporter}: each of its
     * {@code __dlpack__} calls asks the exporter for a fresh export. Unlike
     * {@link PythonDlpack#toPython(Tensor)} it holds no share of a tensor: it stands for the Java
     * object as it is, so once that tensor is closed, exporting it fails (exports already taken
     * keep their memory).
     *
     * @param exporter answers each {@code __dlpack__} call with a fresh export
     * @return the object's address; the caller owns the reference
     */
    public static long exporterObject(DlpackExporter exporter) {
        Objects.requireNonNull(exporter, "exporter");
        return Gil.with(() -> JavaTensorType.newInstance(exporter, null).address());
    }

    /**
     * A new reference to the Python exception behind {@code e} (the producer's own exception object,
     * traceback included), or 0 when {@code e} was made in Java; then {@link PythonException#pythonType()}
     * names a builtin exception.
     *
     * @param e an exception from an earlier call into Java
     * @return the exception object's address, or 0; the caller owns the reference
     */
    public static long exceptionObject(PythonException e) {
        PyObject[] original = e.original();
        if (original == null || original[1] == null || original[1].isClosed()) {
            return 0;
        }
        return Gil.with(() -> original[1].newReference().address());
    }

    private static void checkAddress(long address) {
        if (address == 0 || (address & 7) != 0) {
            throw new IllegalArgumentException("not the address of a Python object: 0x" + Long.toHexString(address));
        }
    }
}
