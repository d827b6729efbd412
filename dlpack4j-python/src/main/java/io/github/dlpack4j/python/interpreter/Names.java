package io.github.dlpack4j.python.interpreter;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** Python objects looked up by name: attributes and modules. Every method needs the GIL. */
public final class Names {
    private Names() {}

    /**
     * {@code getattr(o, name)}.
     *
     * @param o    the object
     * @param name the attribute's name
     * @return a new reference
     * @throws io.github.dlpack4j.python.PythonException the {@code AttributeError}, or what a property raised
     */
    public static MemorySegment getAttr(MemorySegment o, String name) {
        try (Arena arena = Arena.ofConfined()) {
            return PyErrors.check((MemorySegment) CApi.PyObject_GetAttrString.invokeExact(o, arena.allocateFrom(name)));
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }

    /**
     * {@code import name}.
     *
     * @param name the module's dotted name
     * @return a new reference to the module
     * @throws io.github.dlpack4j.python.PythonException what the import raised
     */
    public static MemorySegment importModule(String name) {
        try (Arena arena = Arena.ofConfined()) {
            return PyErrors.check((MemorySegment) CApi.PyImport_ImportModule.invokeExact(arena.allocateFrom(name)));
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }
}
