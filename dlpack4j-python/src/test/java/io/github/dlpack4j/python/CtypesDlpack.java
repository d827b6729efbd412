package io.github.dlpack4j.python;

/** DLPack's structs declared with Python's ctypes, for tests that hand-make producers in Python. */
final class CtypesDlpack {
    private CtypesDlpack() {}

    /** Python code defining {@code DLTensor} and {@code Versioned} (a {@code DLManagedTensorVersioned}). */
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
            """;
}
