package io.github.dlpack4j.python.protocol;

import io.github.dlpack4j.Device;
import io.github.dlpack4j.DeviceType;
import io.github.dlpack4j.DlpackException;
import io.github.dlpack4j.DlpackFlags;
import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.abi.DLDevice;
import io.github.dlpack4j.abi.DLManagedTensor;
import io.github.dlpack4j.abi.DLManagedTensorVersioned;
import io.github.dlpack4j.abi.DLPackExchangeAPI;
import io.github.dlpack4j.abi.DLTensor;
import io.github.dlpack4j.internal.Trampoline;
import io.github.dlpack4j.python.PythonException;
import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.CpythonLayout;
import io.github.dlpack4j.python.interpreter.PyErrors;
import io.github.dlpack4j.python.interpreter.RawMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * DLPack capsules, consumed once: a {@code dltensor_versioned} or {@code dltensor} capsule is renamed
 * {@code used_dltensor_versioned} / {@code used_dltensor} when Java takes ownership, so that neither
 * the producer's capsule destructor nor a second consumer touches the tensor again; and the capsules
 * Java's own exports travel in, whose destructor deletes a tensor nobody consumed. Needs the GIL.
 */
final class Capsules {
    /** Capsule names must outlive the capsules: static, in the global arena. */
    static final MemorySegment VERSIONED = Arena.global().allocateFrom("dltensor_versioned");
    static final MemorySegment LEGACY = Arena.global().allocateFrom("dltensor");
    static final MemorySegment USED_VERSIONED = Arena.global().allocateFrom("used_dltensor_versioned");
    static final MemorySegment USED_LEGACY = Arena.global().allocateFrom("used_dltensor");
    private static final long CAPSULE_TYPE = CpythonLayout.CAPSULE_TYPE.address();

    /**
     * {@code void destructor(PyObject* capsule)} for the capsules Java exports make: one function for
     * the process, which Python may call after the JVM is gone (a capsule still held then), when it
     * does nothing.
     */
    private static final MemorySegment DESTRUCTOR;
    private static final MethodHandle CALL_DELETER = Linker.nativeLinker().downcallHandle(DLPackExchangeAPI.DELETER_FN);
    /**
     * {@code PyCapsule_GetPointer} as {@link CApi#PyCapsule_GetPointer} (critical), returning the
     * address as a long: an import makes no segment for the pointer it passes on.
     */
    private static final MethodHandle GET_POINTER = Linker.nativeLinker().downcallHandle(
            CApi.symbol("PyCapsule_GetPointer"), FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS,
                    ValueLayout.ADDRESS), Linker.Option.critical(false));

    static {
        try {
            // The capsule as JAVA_LONG, not ADDRESS: no segment object made per call.
            DESTRUCTOR = Trampoline.release(MethodHandles.lookup().findStatic(Capsules.class, "destroy",
                    MethodType.methodType(void.class, long.class)), FunctionDescriptor.ofVoid(ValueLayout.JAVA_LONG)).address();
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private Capsules() {}

    /**
     * A new {@code dltensor_versioned} (or {@code dltensor}) capsule owning {@code managed}. If Python
     * collects it unconsumed, its destructor calls the tensor's deleter; a consumer renames it to
     * {@code used_*} and becomes the owner. If no capsule can be made, the deleter runs at once.
     * Needs the GIL.
     */
    static MemorySegment wrap(MemorySegment managed, boolean versioned) throws Throwable {
        MemorySegment name = versioned ? VERSIONED : LEGACY;
        MemorySegment capsule = (MemorySegment) CApi.PyCapsule_New.invokeExact(managed, name, DESTRUCTOR);
        if (capsule.address() == 0) {
            PythonException e = PyErrors.fetchError(); // first: the deleter must not run with an exception pending
            callDeleter(managed, versioned);
            throw e;
        }
        return capsule;
    }

    /** Calls the deleter of a managed struct, if it has one. */
    static void callDeleter(MemorySegment managed, boolean versioned) throws Throwable {
        long at = versioned ? DLManagedTensorVersioned.DELETER : DLManagedTensor.DELETER;
        MemorySegment deleter = RawMemory.at(managed, at + ValueLayout.ADDRESS.byteSize()).get(ValueLayout.ADDRESS, at);
        if (deleter.address() != 0) {
            CALL_DELETER.invokeExact(deleter, managed);
        }
    }

    /**
     * The destructor of exported capsules, run by Python with the GIL: deletes the tensor unless a
     * consumer renamed the capsule (took ownership). Never throws into C, and leaves any exception
     * that is being raised as it is.
     */
    private static void destroy(long capsuleAddress) {
        try {
            MemorySegment capsule = MemorySegment.ofAddress(capsuleAddress);
            MemorySegment name = (MemorySegment) CApi.PyCapsule_GetName.invokeExact(capsule);
            boolean versioned = name.address() == VERSIONED.address();
            if (!versioned && name.address() != LEGACY.address()) {
                return; // consumed: the consumer owns the tensor now
            }
            MemorySegment managed = (MemorySegment) CApi.PyCapsule_GetPointer.invokeExact(capsule, name);
            if (managed.address() != 0) {
                // A capsule may die while an exception is being raised: keep it out of the deleter's way.
                PyErrors.keepingError(() -> {
                    callDeleter(managed, versioned);
                    return null;
                });
            }
        } catch (Throwable ignored) {
            // Nothing may reach C; a deleter that failed leaks its tensor, which is all that is left to lose.
        }
    }

    /** {@code PyCapsule_CheckExact(o)}: the capsule type cannot be subclassed, so exact is all there is. */
    static boolean isCapsule(MemorySegment o) {
        return CpythonLayout.typeOf(o) == CAPSULE_TYPE;
    }

    /** {@link #isCapsule(MemorySegment)} of the object at {@code address}. */
    static boolean isCapsule(long address) {
        return RawMemory.word(address + CpythonLayout.OB_TYPE) == CAPSULE_TYPE;
    }

    /** The capsule's name, or null. */
    static String name(MemorySegment capsule) {
        try {
            MemorySegment n = (MemorySegment) CApi.PyCapsule_GetName.invokeExact(capsule);
            if (n.address() == 0) {
                if (((MemorySegment) CApi.PyErr_Occurred.invokeExact()).address() != 0) {
                    throw PyErrors.fetchError();
                }
                return null;
            }
            return n.reinterpret(256).getString(0);
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }

    /** The device of the tensor in an unconsumed DLPack capsule, read without taking ownership. */
    static Device peekDevice(MemorySegment capsule) {
        String name = name(capsule);
        boolean versioned = "dltensor_versioned".equals(name);
        if (!versioned && !"dltensor".equals(name)) {
            throw new DlpackException("a capsule named '" + name + "' holds no DLPack tensor to ask for its device");
        }
        try {
            MemorySegment expected = versioned ? VERSIONED : LEGACY;
            MemorySegment ptr = PyErrors.check((MemorySegment) CApi.PyCapsule_GetPointer.invokeExact(capsule, expected));
            long dl = versioned ? DLManagedTensorVersioned.DL_TENSOR : DLManagedTensor.DL_TENSOR;
            MemorySegment s = ptr.reinterpret(dl + DLTensor.SIZE);
            return new Device(DeviceType.of(s.get(ValueLayout.JAVA_INT, dl + DLTensor.DEVICE + DLDevice.DEVICE_TYPE)),
                    s.get(ValueLayout.JAVA_INT, dl + DLTensor.DEVICE + DLDevice.DEVICE_ID));
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
    }

    /**
     * Takes ownership of the tensor in the DLPack capsule at {@code address}.
     *
     * @param copy the request's copy policy: {@code FALSE} refuses a tensor the producer copied
     * @throws DlpackException for a used capsule, another kind of capsule, a malformed tensor (its
     *                         deleter has run then) or a copy against {@code copy=False}
     */
    static ManagedTensor consume(long address, Boolean copy) {
        // The capsule and the tensor are kept as longs, segments made only where a downcall takes
        // one (which the JIT then removes): an import allocates no segment for either.
        if (CapsuleFields.USABLE && isCapsule(address)) {
            // PyCapsule_IsValid, _GetPointer and _SetName in place, without a downcall each.
            long ptr = CapsuleFields.pointer(address);
            if (ptr != 0) {
                long name = CapsuleFields.name(address);
                boolean versioned = CapsuleFields.CName.VERSIONED.matches(name);
                if (versioned || CapsuleFields.CName.LEGACY.matches(name)) {
                    // Renamed before adoption, as below.
                    CapsuleFields.setName(address, versioned ? USED_VERSIONED : USED_LEGACY);
                    return adopt(ptr, versioned, copy);
                }
            }
        }
        MemorySegment capsule = MemorySegment.ofAddress(address);
        boolean versioned;
        String name;
        try {
            if ((int) CApi.PyCapsule_IsValid.invokeExact(capsule, VERSIONED) != 0) {
                versioned = true;
                name = null;
            } else if ((int) CApi.PyCapsule_IsValid.invokeExact(capsule, LEGACY) != 0) {
                versioned = false;
                name = null;
            } else {
                versioned = false;
                name = name(capsule);
            }
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
        if (name != null) { // not a usable DLPack capsule: say why
            throw new DlpackException(name.startsWith("used_dltensor")
                    ? "capsule '" + name + "' was consumed already: DLPack capsules are single-use"
                    : name.equals("dltensor") || name.equals("dltensor_versioned")
                    ? "capsule '" + name + "' holds a NULL pointer"
                    : "a capsule named '" + name + "' is not a DLPack tensor (expected 'dltensor_versioned' or 'dltensor')");
        }
        long ptr;
        try {
            // Locals, not conditional expressions: invokeExact takes each argument's static type.
            MemorySegment expected = versioned ? VERSIONED : LEGACY;
            MemorySegment used = versioned ? USED_VERSIONED : USED_LEGACY;
            ptr = (long) GET_POINTER.invokeExact(capsule, expected);
            if (ptr == 0) {
                throw PyErrors.fetchError();
            }
            // Renamed before adoption: from here on the capsule's destructor leaves the tensor to us,
            // and adoption calls the deleter itself if the tensor is malformed.
            PyErrors.check((int) CApi.PyCapsule_SetName.invokeExact(capsule, used));
        } catch (Throwable t) {
            throw PyErrors.unchecked(t);
        }
        return adopt(ptr, versioned, copy);
    }

    /** Adopts the tensor of a capsule renamed {@code used_*}, and refuses a copy against {@code copy=False}. */
    private static ManagedTensor adopt(long ptr, boolean versioned, Boolean copy) {
        ManagedTensor tensor = ProducerDeleter.adopt(ptr, versioned);
        if (Boolean.FALSE.equals(copy) && (tensor.flags() & DlpackFlags.IS_COPIED) != 0) {
            tensor.close();
            throw new DlpackException("copy=False was requested, but the producer copied the data (IS_COPIED)");
        }
        return tensor;
    }
}
