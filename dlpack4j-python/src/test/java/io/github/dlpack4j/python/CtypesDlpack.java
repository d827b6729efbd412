package io.github.dlpack4j.python;

/** DLPack's structs declared with Python's ctypes, for tests that hand-make producers in Python. */
final class CtypesDlpack {
    private CtypesDlpack() {}

    /**
     * Python code defining {@code DLTensor} and {@code Versioned} (a {@code DLManagedTensorVersioned}),
     * and {@code versioned_capsule}, a hand-made producer's capsule.
     */
    static final String STRUCTS = """
            import ctypes
            class DLTensor(ctypes.Structure):
                _fields_ = [('data', ctypes.c_void_p), ('device_type', ctypes.c_int32), ('device_id', ctypes.c_int32),
                            ('ndim', ctypes.c_int32), ('code', ctypes.c_uint8), ('bits', ctypes.c_uint8),
                            ('lanes', ctypes.c_uint16), ('shape', ctypes.c_void_p), ('strides', ctypes.c_void_p),
                            ('byte_offset', ctypes.c_uint64)]
            class Versioned(ctypes.Structure):
                _fields_ = [('major', ctypes.c_uint32), ('minor', ctypes.c_uint32), ('ctx', ctypes.c_void_p),
                            ('deleter', ctypes.c_void_p), ('flags', ctypes.c_uint64), ('dl', DLTensor)]
            def versioned_capsule(values, deleter, keep, major=1, ndim=1):
                # A dltensor_versioned capsule of a float64 struct over values (ndim as given, shape and
                # strides of one dimension), calling deleter; keep holds what the struct points at.
                buf = (ctypes.c_double * len(values))(*values)
                shape = (ctypes.c_int64 * 1)(len(values))
                strides = (ctypes.c_int64 * 1)(1)
                s = Versioned(major, 3, None, ctypes.cast(deleter, ctypes.c_void_p), 0,
                              DLTensor(ctypes.addressof(buf), 1, 0, ndim, 2, 64, 1,
                                       ctypes.addressof(shape), ctypes.addressof(strides), 0))
                keep.append((buf, shape, strides, s))
                new = ctypes.pythonapi.PyCapsule_New
                new.restype = ctypes.py_object
                new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
                return new(ctypes.addressof(s), b'dltensor_versioned', None)
            """;
}
