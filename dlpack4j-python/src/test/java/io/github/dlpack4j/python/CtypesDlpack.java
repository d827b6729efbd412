package io.github.dlpack4j.python;

/**
 * DLPack's structs declared with Python's ctypes, for tests that hand-make producers and consumers in
 * Python: they need nothing but the standard library, so they run on every CPython dlpack4j supports.
 */
final class CtypesDlpack {
    private CtypesDlpack() {}

    /**
     * Python code defining {@code DLTensor}, {@code Versioned} (a {@code DLManagedTensorVersioned}) and
     * {@code Legacy} (a {@code DLManagedTensor}); {@code versioned_capsule} and {@code legacy_capsule},
     * a hand-made producer's capsules; and {@code consume}, a consumer of {@code __dlpack__}.
     */
    static final String STRUCTS = """
            import ctypes, itertools
            class DLTensor(ctypes.Structure):
                _fields_ = [('data', ctypes.c_void_p), ('device_type', ctypes.c_int32), ('device_id', ctypes.c_int32),
                            ('ndim', ctypes.c_int32), ('code', ctypes.c_uint8), ('bits', ctypes.c_uint8),
                            ('lanes', ctypes.c_uint16), ('shape', ctypes.c_void_p), ('strides', ctypes.c_void_p),
                            ('byte_offset', ctypes.c_uint64)]
            class Versioned(ctypes.Structure):
                _fields_ = [('major', ctypes.c_uint32), ('minor', ctypes.c_uint32), ('ctx', ctypes.c_void_p),
                            ('deleter', ctypes.c_void_p), ('flags', ctypes.c_uint64), ('dl', DLTensor)]
            class Legacy(ctypes.Structure):
                _fields_ = [('dl', DLTensor), ('ctx', ctypes.c_void_p), ('deleter', ctypes.c_void_p)]
            Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
            _new_capsule = ctypes.pythonapi.PyCapsule_New
            _new_capsule.restype = ctypes.py_object
            _new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
            _capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
            _capsule_pointer.restype = ctypes.c_void_p
            _capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
            _capsule_rename = ctypes.pythonapi.PyCapsule_SetName
            _capsule_rename.restype = ctypes.c_int
            _capsule_rename.argtypes = [ctypes.py_object, ctypes.c_char_p]
            def _float64_tensor(values, ndim, keep):
                # A DLTensor of float64 over values (ndim as given, shape and strides of one dimension).
                buf = (ctypes.c_double * len(values))(*values)
                shape = (ctypes.c_int64 * 1)(len(values))
                strides = (ctypes.c_int64 * 1)(1)
                keep.append((buf, shape, strides))
                return DLTensor(ctypes.addressof(buf), 1, 0, ndim, 2, 64, 1, ctypes.addressof(shape),
                                ctypes.addressof(strides), 0)
            def versioned_capsule(values, deleter, keep, major=1, ndim=1):
                # A dltensor_versioned capsule of a float64 struct over values, calling deleter; keep
                # holds what the struct points at.
                s = Versioned(major, 3, None, ctypes.cast(deleter, ctypes.c_void_p), 0,
                              _float64_tensor(values, ndim, keep))
                keep.append(s)
                return _new_capsule(ctypes.addressof(s), b'dltensor_versioned', None)
            def legacy_capsule(values, deleter, keep):
                # The same as a dltensor capsule (DLPack before 1.0), as jax and numpy 1.x make.
                s = Legacy(_float64_tensor(values, 1, keep), None, ctypes.cast(deleter, ctypes.c_void_p))
                keep.append(s)
                return _new_capsule(ctypes.addressof(s), b'dltensor', None)
            def consume(producer, first=None, **kwargs):
                # What a consumer does with producer.__dlpack__(**kwargs): takes the capsule's tensor
                # (renaming it used_...), reads its float64 elements in row-major order, writes first
                # into element 0 if given, and calls the deleter once. Returns (version or None,
                # flags, (code, bits, lanes), shape, values).
                capsule = producer.__dlpack__(**kwargs)
                name = b'dltensor_versioned' if kwargs.get('max_version', (0,))[0] >= 1 else b'dltensor'
                p = _capsule_pointer(capsule, name)
                assert _capsule_rename(capsule, b'used_' + name) == 0
                m = (Versioned if name == b'dltensor_versioned' else Legacy).from_address(p)
                dl = m.dl
                assert (dl.device_type, dl.device_id) == (1, 0), (dl.device_type, dl.device_id)
                shape = list((ctypes.c_int64 * dl.ndim).from_address(dl.shape)) if dl.ndim else []
                strides = list((ctypes.c_int64 * dl.ndim).from_address(dl.strides)) if dl.strides else None
                if strides is None:
                    strides = [1] * dl.ndim
                    for i in range(dl.ndim - 2, -1, -1):
                        strides[i] = strides[i + 1] * shape[i + 1]
                def element(index):
                    at = dl.data + dl.byte_offset + 8 * sum(i * s for i, s in zip(index, strides))
                    return ctypes.c_double.from_address(at)
                values = [element(index).value for index in itertools.product(*[range(n) for n in shape])]
                if first is not None:
                    element([0] * dl.ndim).value = first
                # Everything is read before the deleter frees the struct that m and dl are views of.
                version = (m.major, m.minor) if name == b'dltensor_versioned' else None
                flags = m.flags if name == b'dltensor_versioned' else None
                result = (version, flags, (dl.code, dl.bits, dl.lanes), shape, values)
                if m.deleter:
                    Deleter(m.deleter)(p)
                return result
            """;
}
