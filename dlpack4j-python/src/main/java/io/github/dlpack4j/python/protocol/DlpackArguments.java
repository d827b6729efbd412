package io.github.dlpack4j.python.protocol;

import static java.lang.foreign.ValueLayout.ADDRESS;

import io.github.dlpack4j.Device;
import io.github.dlpack4j.DeviceType;
import io.github.dlpack4j.DlpackExporter;
import io.github.dlpack4j.DlpackFlags;
import io.github.dlpack4j.ExportRequest;
import io.github.dlpack4j.python.PythonException;
import io.github.dlpack4j.python.interpreter.CApi;
import io.github.dlpack4j.python.interpreter.Convert;
import io.github.dlpack4j.python.interpreter.CpythonLayout;
import io.github.dlpack4j.python.interpreter.PyErrors;
import io.github.dlpack4j.python.interpreter.RawMemory;
import io.github.dlpack4j.python.interpreter.Refs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The arguments of {@code __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)},
 * as a vectorcall passes them, parsed and validated into an {@link ExportRequest} before any exporter
 * is asked for anything.
 *
 * <p>Each mistake raises the Python exception that NumPy 2.4.6 raises for the same call on an
 * ndarray, checked in NumPy's order (a test compares the two on many requests): positional
 * arguments and unknown keywords ({@code TypeError}); {@code dl_device} (not a tuple or not two ints:
 * {@code TypeError}/{@code OverflowError}; a device the tensor is not on: {@code BufferError});
 * {@code copy} (a string: {@code ValueError}; otherwise its truth value); {@code max_version} (not a
 * 2-tuple: {@code TypeError}; a major that is not an int: its conversion error); {@code stream}
 * (anything but None on the CPU: {@code RuntimeError}; elsewhere an int, without the values DLPack
 * reserves: 0 on CUDA, 1 and 2 on ROCm, {@code ValueError}); and a read-only tensor asked for the
 * legacy ABI without a copy ({@code BufferError}).
 *
 * <p>A {@code max_version} with major 1 or more selects the versioned ABI (at version 1.3); none, or
 * a 0.x maximum, selects the legacy one. Needs the GIL.
 */
final class DlpackArguments {
    private static final MemorySegment NONE = CpythonLayout.NONE;
    private static final MemorySegment TRUE = CpythonLayout.TRUE;
    private static final MemorySegment FALSE = CpythonLayout.FALSE;
    private static final MemorySegment UNICODE_TYPE = CpythonLayout.UNICODE_TYPE;
    private static final String[] NAMES = {"stream", "max_version", "dl_device", "copy"};
    private static final int STREAM = 0;
    private static final int MAX_VERSION = 1;
    private static final int DL_DEVICE = 2;
    private static final int COPY = 3;
    /** The keyword names as interned strings: callers' names are usually these very objects. */
    private static final long[] INTERNED = new long[NAMES.length];
    private static final MemorySegment[] C_NAMES = new MemorySegment[NAMES.length];

    static {
        try {
            for (int i = 0; i < NAMES.length; i++) {
                C_NAMES[i] = Arena.global().allocateFrom(NAMES[i]);
                INTERNED[i] = PyErrors.check((MemorySegment) CApi.PyUnicode_InternFromString.invokeExact(C_NAMES[i])).address();
            }
        } catch (Throwable t) {
            throw new ExceptionInInitializerError(t);
        }
    }

    private DlpackArguments() {}

    /**
     * The request in a {@code METH_FASTCALL | METH_KEYWORDS} call: {@code nargs} positional values
     * at {@code args}, then one value per name in the {@code kwnames} tuple (0 when none). Objects
     * are passed and kept as addresses: segments made per call would be allocated on every call.
     *
     * @throws PythonException the Python exception to raise
     */
    static ExportRequest parse(DlpackExporter exporter, long args, long nargs, long kwnames) throws Throwable {
        if (nargs != 0) {
            throw new PythonException("TypeError", "__dlpack__() takes 0 positional arguments but " + nargs
                    + (nargs == 1 ? " was" : " were") + " given");
        }
        long none = NONE.address();
        long stream = none;
        long maxVersion = none;
        long dlDevice = none;
        long copy = none;
        if (kwnames != 0) {
            int[] keywords = keywords(kwnames);
            for (int i = 0; i < keywords.length; i++) {
                long value = RawMemory.word(args + i * ADDRESS.byteSize());
                switch (keywords[i]) {
                    case STREAM -> stream = value;
                    case MAX_VERSION -> maxVersion = value;
                    case DL_DEVICE -> dlDevice = value;
                    case COPY -> copy = value;
                    default -> throw new PythonException("TypeError", "__dlpack__() got an unexpected keyword argument '"
                            + Convert.str((MemorySegment) CApi.PyTuple_GetItem.invokeExact(object(kwnames), (long) i)) + "'");
                }
            }
        }
        Device device = exporter.device();
        Device requested = isNone(dlDevice) ? null : requestedDevice(object(dlDevice), device);
        Boolean copyPolicy = copyPolicy(copy);
        boolean versioned = !isNone(maxVersion) && major(maxVersion) >= 1;
        Long streamValue = null;
        if (!isNone(stream)) {
            if (device.type() == DeviceType.CPU) {
                throw new PythonException("RuntimeError", "a CPU tensor takes only stream=None (DLPack defines no CPU "
                        + "streams), got stream=" + Convert.str(object(stream)));
            }
            streamValue = Convert.asLong(object(stream));
            checkStream(device.type(), streamValue);
        }
        if (!versioned && !Boolean.TRUE.equals(copyPolicy)) {
            long flags = exporter.flags();
            if ((flags & DlpackFlags.READ_ONLY) != 0) {
                throw new PythonException("BufferError", "cannot export a read-only tensor through the legacy DLPack "
                        + "ABI, which cannot say read-only: ask with max_version=(1, 0) or higher, or copy=True");
            }
            if ((flags & DlpackFlags.IS_SUBBYTE_TYPE_PADDED) != 0) {
                throw new PythonException("BufferError", "padded sub-byte data needs the versioned DLPack ABI: ask "
                        + "with max_version=(1, 0) or higher, or copy=True");
            }
        }
        if (copyPolicy == null && requested == null && streamValue == null) {
            return versioned ? ExportRequest.VERSIONED : ExportRequest.LEGACY; // the common requests, no allocation
        }
        return new ExportRequest(versioned, copyPolicy, requested, streamValue);
    }

    /** The stream numbers DLPack reserves per device type (-1, "do not synchronise", is always fine). */
    private static void checkStream(DeviceType type, long stream) {
        boolean cuda = type == DeviceType.CUDA || type == DeviceType.CUDA_MANAGED;
        if (cuda && stream == 0) {
            throw new PythonException("ValueError", "stream=0 is ambiguous for CUDA and DLPack disallows it: "
                    + "use 1 for the legacy default stream, 2 for the per-thread default stream");
        }
        if (type == DeviceType.ROCM && (stream == 1 || stream == 2)) {
            throw new PythonException("ValueError", "stream=" + stream + " is not supported for ROCm: "
                    + "use None or 0 for the default stream");
        }
    }

    private static boolean isNone(long o) {
        return o == NONE.address();
    }

    /** The object at {@code address}, for the calls off the common path. */
    private static MemorySegment object(long address) {
        return MemorySegment.ofAddress(address);
    }

    /*
     * Callers pass the same kwnames tuple and the same max_version tuple on every call (NumPy and
     * PyTorch keep them as constants): the last of each is kept, with a reference so that its address
     * cannot be reused, and its meaning is not worked out again. Every caller holds the GIL, which
     * orders the use of these fields.
     */
    private static long lastKwnames;
    private static int[] lastKeywords;
    private static long lastMaxVersion;
    private static long lastMajor;
    private static final MemorySegment LONG_TYPE = CpythonLayout.LONG_TYPE;

    /** The keyword index of each name in {@code kwnames}. */
    private static int[] keywords(long kwnamesAddress) throws Throwable {
        if (kwnamesAddress == lastKwnames) {
            return lastKeywords;
        }
        MemorySegment kwnames = object(kwnamesAddress);
        int n = (int) PyErrors.checkSize((long) CApi.PyTuple_Size.invokeExact(kwnames));
        int[] keywords = new int[n];
        for (int i = 0; i < n; i++) {
            keywords[i] = keyword(PyErrors.check((MemorySegment) CApi.PyTuple_GetItem.invokeExact(kwnames, (long) i)));
        }
        long before = lastKwnames;
        Refs.incRef(kwnames);
        lastKwnames = kwnamesAddress;
        lastKeywords = keywords;
        release(before); // last: dropping it may run Python code that calls back in
        return keywords;
    }

    /** Drops the reference to a cache's previous object, if there was one. */
    private static void release(long before) {
        if (before != 0) {
            Refs.decRef(object(before));
        }
    }

    /** Which keyword {@code name} is: by identity when interned, by value otherwise; -1 for none. */
    private static int keyword(MemorySegment name) throws Throwable {
        long a = name.address();
        for (int i = 0; i < INTERNED.length; i++) {
            if (a == INTERNED[i]) {
                return i;
            }
        }
        for (int i = 0; i < C_NAMES.length; i++) {
            int cmp = (int) CApi.PyUnicode_CompareWithASCIIString.invokeExact(name, C_NAMES[i]);
            if (cmp == 0) {
                return i;
            }
        }
        return -1;
    }

    /** {@code dl_device}: a (device_type, device_id) tuple of ints naming the tensor's own device. */
    private static Device requestedDevice(MemorySegment dlDevice, Device own) throws Throwable {
        long size = (long) CApi.PyTuple_Size.invokeExact(dlDevice);
        if (size == -1) {
            PyErrors.clearError();
            throw new PythonException("TypeError", "dl_device must be a tuple");
        }
        if (size != 2) {
            throw new PythonException("TypeError", "dl_device must be a tuple of 2 ints (device_type, device_id), got "
                    + size + " items");
        }
        int type = asInt((MemorySegment) CApi.PyTuple_GetItem.invokeExact(dlDevice, 0L));
        int id = asInt((MemorySegment) CApi.PyTuple_GetItem.invokeExact(dlDevice, 1L));
        if (type != own.type().code() || id != own.id()) {
            throw new PythonException("BufferError", "unsupported device requested: (" + type + ", " + id
                    + "); the tensor is on " + own + " and dlpack4j does not copy between devices");
        }
        return own;
    }

    /** {@code copy}: None, or a truth value; strings are refused as NumPy refuses them. */
    private static Boolean copyPolicy(long copyAddress) throws Throwable {
        if (isNone(copyAddress)) {
            return null;
        }
        if (copyAddress == TRUE.address()) {
            return Boolean.TRUE;
        }
        if (copyAddress == FALSE.address()) {
            return Boolean.FALSE;
        }
        MemorySegment copy = object(copyAddress);
        if (PyErrors.check((int) CApi.PyObject_IsInstance.invokeExact(copy, UNICODE_TYPE)) == 1) {
            throw new PythonException("ValueError", "strings are not allowed for 'copy' keyword. Use True/False/None instead.");
        }
        return PyErrors.check((int) CApi.PyObject_IsTrue.invokeExact(copy)) == 1;
    }

    /** The major version in {@code max_version}, a (major, minor) tuple; the minor is not read. */
    private static long major(long maxVersionAddress) throws Throwable {
        if (maxVersionAddress == lastMaxVersion) {
            return lastMajor;
        }
        MemorySegment maxVersion = object(maxVersionAddress);
        long size = (long) CApi.PyTuple_Size.invokeExact(maxVersion);
        if (size != 2) {
            if (size == -1) {
                PyErrors.clearError();
            }
            throw new PythonException("TypeError", "max_version must be None or a tuple with two elements.");
        }
        MemorySegment first = (MemorySegment) CApi.PyTuple_GetItem.invokeExact(maxVersion, 0L);
        long major = Convert.asLong(first);
        boolean plainInt = CpythonLayout.typeOf(first) == LONG_TYPE.address();
        if (plainInt) { // an int's value cannot change; an object with __index__ might
            long before = lastMaxVersion;
            Refs.incRef(maxVersion);
            lastMaxVersion = maxVersionAddress;
            lastMajor = major;
            release(before);
        }
        return major;
    }

    private static int asInt(MemorySegment o) throws Throwable {
        long v = Convert.asLong(o);
        if (v != (int) v) {
            throw new PythonException("OverflowError", "signed integer is " + (v > 0 ? "greater than maximum" : "less than minimum"));
        }
        return (int) v;
    }
}
