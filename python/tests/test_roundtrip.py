"""NumPy, PyTorch and JAX arrays into Java and back out, zero-copy, for every dtype each exports."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import dlpack4j
from support import doubles, longs

NUMPY_DTYPES = [
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128,
]
TORCH_DTYPES = [
    torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32,
    torch.uint64, torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
    torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz, torch.float8_e8m0fnu,
]
JAX_DTYPES = [
    jnp.bool_, jnp.int8, jnp.int16, jnp.int32, jnp.int64, jnp.uint8, jnp.uint16, jnp.uint32, jnp.uint64,
    jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64, jnp.complex64, jnp.complex128,
]
SHAPES = [(), (5,), (3, 4), (2, 3, 4), (2, 3, 2, 3)]
jax.config.update("jax_enable_x64", True)


def numpy_values(dtype, shape) -> np.ndarray:
    n = int(np.prod(shape))
    return (np.arange(n) % 7 - (0 if np.dtype(dtype).kind in "bu" else 3)).astype(dtype).reshape(shape)


def exports(x) -> bool:
    """Whether the producer exports ``x`` over DLPack at all (what it refuses is not ours to test)."""
    try:
        x.__dlpack__()
    except (BufferError, RuntimeError, TypeError):
        return False
    return True


def numpy_pointer(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_numpy_arrays_of_every_dtype_and_0_to_4_dims_reach_java_and_come_back_zero_copy(no_leaks):
    for dtype in NUMPY_DTYPES:
        for shape in SHAPES:
            a = numpy_values(dtype, shape)
            with dlpack4j.to_java(a) as t:
                assert list(t.shape()) == list(shape)
                assert t.dataPointer() == numpy_pointer(a), (dtype, shape)
                back = np.from_dlpack(t)
                assert back.dtype == a.dtype and back.shape == a.shape
                assert numpy_pointer(back) == numpy_pointer(a)
                np.testing.assert_array_equal(back, a)
                del back


def test_torch_tensors_of_every_dtype_it_exports_reach_java_and_come_back_to_torch_and_numpy(no_leaks):
    done = []
    for dtype in TORCH_DTYPES:
        for shape in SHAPES:
            x = torch.from_numpy(numpy_values(np.float32, shape)).to(dtype)
            if not exports(x):
                continue
            with dlpack4j.to_java(x) as t:
                assert t.dataPointer() == x.data_ptr(), (dtype, shape)
                back = torch.from_dlpack(t)
                assert back.dtype == dtype and tuple(back.shape) == shape
                assert back.data_ptr() == x.data_ptr()
                assert torch.equal(as_bytes(back), as_bytes(x))
                if dtype != torch.bfloat16 and "float8" not in str(dtype):
                    np.testing.assert_array_equal(np.from_dlpack(t), x.numpy())
                del back
            done.append(dtype)
    # torch 2.13 exports every one of them
    assert set(done) == set(TORCH_DTYPES), sorted(map(str, set(TORCH_DTYPES) - set(done)))


def as_bytes(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1).view(torch.uint8)


def test_jax_arrays_of_every_dtype_it_exports_reach_java_and_come_back(no_leaks):
    done = []
    for dtype in JAX_DTYPES:
        for shape in SHAPES:
            x = jnp.asarray(numpy_values(np.float32, shape)).astype(dtype)
            if not exports(x):
                continue
            with dlpack4j.to_java(x) as t:
                assert t.dataPointer() == x.unsafe_buffer_pointer(), (dtype, shape)
                back = torch.from_dlpack(t) if dtype == jnp.bfloat16 else np.from_dlpack(t)
                if dtype == jnp.bfloat16:
                    assert torch.equal(back.float(), torch.from_numpy(np.asarray(x, np.float32)))
                else:
                    np.testing.assert_array_equal(back, np.asarray(x))
                del back
            done.append(dtype)
    assert len(set(done)) == len(JAX_DTYPES)


def test_strided_transposed_and_reversed_views_keep_their_layout_in_java():
    base = np.arange(48.0).reshape(6, 8)
    for view in (base[::2, 1::3], base.T, base[::-1, ::-2], base[2:5, 3]):
        with dlpack4j.to_java(view) as t:
            assert list(t.strides()) == [s // view.itemsize for s in view.strides]
            assert t.dataPointer() == numpy_pointer(view)
            np.testing.assert_array_equal(np.array(t.toDoubleArray()).reshape(view.shape), view)
            back = np.from_dlpack(t)
            assert back.strides == view.strides and numpy_pointer(back) == numpy_pointer(view)
            np.testing.assert_array_equal(back, view)
    x = torch.arange(24.0).reshape(4, 6).t()[1:, ::2]
    with dlpack4j.to_java(x) as t:
        assert list(t.strides()) == list(x.stride())
        assert torch.equal(torch.from_dlpack(t), x)


def test_writes_are_seen_on_both_sides():
    a = np.zeros((2, 3), np.float32)
    x = torch.zeros(4, dtype=torch.int64)
    with dlpack4j.to_java(a) as t, dlpack4j.to_java(x) as u:
        t.setDouble(7.5, 1, 2)
        u.setLong(-9, 3)
        assert a[1, 2] == 7.5 and x[3] == -9
        a[0, 1] = 3.25
        x[0] = 11
        assert t.getDouble(0, 1) == 3.25 and u.getLong(0) == 11
        seen = np.from_dlpack(t)
        seen[0, 0] = 1.5
        assert a[0, 0] == 1.5 and t.getDouble(0, 0) == 1.5


def test_read_only_arrays_arrive_read_only_and_leave_read_only():
    a = np.arange(6.0)
    a.flags.writeable = False
    with dlpack4j.to_java(a) as t:
        assert t.isReadOnly()
        with pytest.raises(Exception, match="read-only"):
            t.setDouble(1.0, 0)
        back = np.from_dlpack(t)
        assert not back.flags.writeable
        np.testing.assert_array_equal(back, a)
    with dlpack4j.to_java(np.arange(3.0)) as t:
        assert not t.isReadOnly()


def test_copy_true_gives_java_its_own_memory_and_copy_false_the_producers():
    a = np.arange(4.0)
    with dlpack4j.to_java(a, copy=True) as t:
        assert t.dataPointer() != numpy_pointer(a)
        t.setDouble(100.0, 0)
        assert a[0] == 0.0
    with dlpack4j.to_java(a, copy=False) as t:
        assert t.dataPointer() == numpy_pointer(a)


def test_a_dlpack_capsule_is_taken_as_it_is_and_only_once():
    a = np.arange(5, dtype=np.int32)
    capsule = a.__dlpack__(max_version=(1, 0))
    with dlpack4j.to_java(capsule) as t:
        assert list(t.toLongArray()) == [0, 1, 2, 3, 4]
        assert t.dataPointer() == numpy_pointer(a)
    with pytest.raises(BufferError, match="used"):
        dlpack4j.to_java(capsule)


def test_java_tensors_made_in_java_go_to_numpy_torch_and_jax_zero_copy(java):
    t = java.Tensor.of(doubles([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), longs([2, 3]))
    try:
        a, b, c = np.from_dlpack(t), torch.from_dlpack(t), jnp.from_dlpack(t)
        assert numpy_pointer(a) == b.data_ptr() == t.dataPointer()
        np.testing.assert_array_equal(a, [[1, 2, 3], [4, 5, 6]])
        np.testing.assert_array_equal(np.asarray(c), a)
        assert t.__dlpack_device__() == (1, 0)
        a[1, 1] = 50
        assert t.getDouble(1, 1) == 50 and b[1, 1] == 50
    finally:
        t.close()
