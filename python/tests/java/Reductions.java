package dlpack4j.tests;

import io.github.dlpack4j.DataType;
import io.github.dlpack4j.Dlpack;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.PythonDlpack;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

/** Java methods that take dlpack4j tensors, called from the Python tests through JPype. */
public final class Reductions {
    private static Tensor kept;

    private Reductions() {}

    /** The sum of every element. */
    public static double sum(Tensor t) {
        double s = 0;
        for (double v : t.toDoubleArray()) {
            s += v;
        }
        return s;
    }

    /** The sum, then closes the tensor (which releases a Python producer's memory). */
    public static double sumAndClose(Tensor t) {
        try (t) {
            return sum(t);
        }
    }

    /** The sums of the rows of a 2-d tensor, as a new float64 Java tensor. */
    public static Tensor rowSums(Tensor t) {
        if (t.ndim() != 2) {
            throw new IllegalArgumentException("rowSums needs a 2-d tensor, not " + t);
        }
        long rows = t.shape()[0];
        long cols = t.shape()[1];
        Tensor out = Tensor.zeros(DataType.FLOAT64, rows);
        for (long i = 0; i < rows; i++) {
            double s = 0;
            for (long j = 0; j < cols; j++) {
                s += t.getDouble(i, j);
            }
            out.setDouble(s, i);
        }
        return out;
    }

    /** Keeps {@code t} referenced from Java until {@link #drop()}. */
    public static void keep(Tensor t) {
        kept = t;
    }

    /** Forgets the tensor {@link #keep} kept, without closing it. */
    public static void drop() {
        kept = null;
    }

    /**
     * Asks the JVM to collect garbage and run cleaners until the library's native bytes and live
     * exports stay the same over two rounds (at least three rounds, at most twenty).
     */
    public static void collect() throws InterruptedException {
        long previousBytes = -1;
        int previousExports = -1;
        for (int i = 0; i < 20; i++) {
            long bytes = Dlpack.nativeBytesInUse();
            int exports = Dlpack.liveExports();
            if (bytes == previousBytes && exports == previousExports && i >= 3) {
                return;
            }
            previousBytes = bytes;
            previousExports = exports;
            System.gc();
            Thread.sleep(20);
        }
    }

    /**
     * Closes {@code t} on a new Java thread while this thread holds the GIL in a scope (so that no
     * queued deleter runs meanwhile), and returns what {@code stillAlive} says right after, still
     * holding it.
     *
     * @throws IllegalStateException if the close did not return within 10 s (it waited for the GIL)
     */
    public static boolean closeOnAJavaThreadWhileHoldingTheGil(Tensor t, BooleanSupplier stillAlive) {
        return Python.attach().withGil(() -> {
            Thread closer = Thread.ofPlatform().start(t::close);
            try {
                if (!closer.join(Duration.ofSeconds(10))) {
                    throw new IllegalStateException("a close on a Java thread waited for the GIL");
                }
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            return stillAlive.getAsBoolean();
        });
    }

    /**
     * Sums {@code t} in Python (numpy) on a new Java thread while this thread, which Python called,
     * waits for it: the calling Python thread is inside Java then.
     */
    public static double sumInPythonOnAnotherThread(Tensor t) throws Exception {
        AtomicReference<Object> result = new AtomicReference<>();
        Thread worker = Thread.ofPlatform().start(() -> {
            Python py = Python.attach();
            try (PyObject obj = PythonDlpack.toPython(t);
                 PyObject np = py.importModule("numpy");
                 PyObject a = np.callMethod("from_dlpack", obj);
                 PyObject s = a.callMethod("sum")) {
                result.set(s.asDouble());
            } catch (RuntimeException e) {
                result.set(e);
            }
        });
        worker.join();
        if (result.get() instanceof RuntimeException e) {
            throw e;
        }
        return (Double) result.get();
    }
}
