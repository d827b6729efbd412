package io.github.dlpack4j.python.protocol;

import io.github.dlpack4j.python.PyObject;
import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.CpythonLayout;
import io.github.dlpack4j.python.interpreter.PyObjects;
import io.github.dlpack4j.python.interpreter.Refs;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * What an import needs to know of a producer's Python type, found once per type and cached: its C
 * Exchange API table, and the checks its {@code __dlpack__} makes that the table skips (torch).
 * The cache holds a reference to each type it saw, so a type cannot be freed while cached and its
 * address cannot come back as another type's. Every method needs the GIL.
 *
 * @param type  the type, kept alive by the cache
 * @param typeAddress its address, compared on every import
 * @param api   its exchange API, or null
 * @param torch the checks for a {@code torch.Tensor} type, or null
 * @param dlpackMethod the {@code __dlpack__} that every object of the type has ({@link DlpackMethod}),
 *                     kept alive by the cache; null where it must be looked up on each object
 * @param dlpackMethodAddress its address, 0 for none
 */
public record ProducerType(PyObject type, long typeAddress, ExchangeTable api, TorchChecks torch, PyObject dlpackMethod,
                           long dlpackMethodAddress) {
    private static final ConcurrentHashMap<Long, ProducerType> BY_TYPE = new ConcurrentHashMap<>();

    /** The type most recently looked up: imports usually repeat a type. */
    private static volatile ProducerType last;

    /** The facts of {@code obj}'s type (a borrowed object pointer). */
    public static ProducerType of(MemorySegment obj) throws Throwable {
        long type = CpythonLayout.typeOf(obj);
        ProducerType l = last;
        if (l != null && l.typeAddress == type) {
            return l;
        }
        ProducerType found = BY_TYPE.get(type);
        if (found == null) {
            MemorySegment t = MemorySegment.ofAddress(type);
            Refs.incRef(t);
            PyObject kept = PyObjects.steal(t); // the cache keeps this reference for good
            TorchChecks torch = TorchChecks.forType(kept);
            PyObject method = DlpackMethod.of(kept);
            found = new ProducerType(kept, type, ExchangeTable.discover(kept, torch).orElse(null), torch, method,
                    method == null ? 0 : PyObjects.borrow(method).address());
            BY_TYPE.put(type, found);
        }
        last = found;
        return found;
    }

    /**
     * The first non-null answer of {@code test} over the classes of {@code type.__mro__}, in order;
     * null if none answers. For discovery, once per type.
     */
    static <T> T firstInMro(PyObject type, Function<PyObject, T> test) throws Throwable {
        try (PyObject mro = type.attr("__mro__")) {
            long n = (long) CApi.PySequence_Size.invokeExact(PyObjects.borrow(mro));
            for (long i = 0; i < n; i++) {
                try (PyObject c = PyObjects.stealChecked((MemorySegment) CApi.PySequence_GetItem.invokeExact(PyObjects.borrow(mro), i))) {
                    T answer = test.apply(c);
                    if (answer != null) {
                        return answer;
                    }
                }
            }
        }
        return null;
    }
}
