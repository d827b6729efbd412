"""Java methods that take Tensor, called with Python arrays; Java tensors read by Python; threads."""

from __future__ import annotations

import threading
from collections.abc import Callable

import jax.numpy as jnp
import jpype
import numpy as np
import torch

import dlpack4j


def test_a_java_method_taking_a_tensor_reduces_a_numpy_array_into_a_java_tensor_numpy_reads(java, no_leaks):
    a = np.arange(12.0).reshape(3, 4)
    sums = java.Reductions.rowSums(a)  # the array converts to a Tensor on its way in, zero-copy
    try:
        assert isinstance(sums, java.Tensor)
        out = np.from_dlpack(sums)
        assert out.__array_interface__["data"][0] == sums.dataPointer()  # NumPy reads Java's memory
        np.testing.assert_array_equal(out, a.sum(axis=1))
        del out
    finally:
        sums.close()


def test_java_methods_taking_a_tensor_accept_torch_and_jax_arrays_too(java):
    assert java.Reductions.sumAndClose(torch.arange(10, dtype=torch.int32)) == 45
    assert java.Reductions.sumAndClose(jnp.arange(5.0)) == 10
    assert java.Reductions.sumAndClose(np.ones((2, 2), np.float16)) == 4


def test_from_java_is_made_once_per_proxy_and_speaks_dlpack(java):
    t = java.Tensor.zeros(java.DataType.FLOAT32, [3])
    try:
        face = dlpack4j.from_java(t)
        assert dlpack4j.from_java(t) is face
        assert type(face).__name__ == "Tensor" and type(face).__module__ == "dlpack4j"
        assert face.__dlpack_device__() == (1, 0)
        a = np.from_dlpack(face)
        a[:] = [1, 2, 3]
        assert list(t.toDoubleArray()) == [1, 2, 3]
    finally:
        t.close()


def run_threads(count: int, work: Callable[[int], object]) -> list[object]:
    """Runs ``work(k)`` on ``count`` Python threads at once; their results, or the first error."""
    results: list[object] = []
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            results.append(work(k))
        except BaseException as e:  # reported below, on the test's thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(count)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads), "deadlock: a thread never finished"
    assert not errors, errors
    return results


def test_eight_python_threads_calling_java_that_imports_and_reduces_get_right_results(java, no_leaks):
    def work(k: int) -> float:
        a = np.full((4, 8), float(k))
        return sum(java.Reductions.sumAndClose(a) for _ in range(1000))

    assert sorted(run_threads(8, work)) == [1000 * 32.0 * k for k in range(8)]


def test_a_java_thread_calls_python_while_the_python_thread_that_called_java_waits(java):
    a = np.arange(10.0)
    assert java.Reductions.sumInPythonOnAnotherThread(a) == 45.0


def test_python_threads_and_java_threads_calling_python_at_once_do_not_deadlock(java):
    def work(k: int) -> list[float]:
        return [java.Reductions.sumInPythonOnAnotherThread(np.full(3, float(i + k))) for i in range(200)]

    for k, sums in enumerate(sorted(run_threads(4, work))):
        assert sums == [3.0 * (i + k) for i in range(200)]


def test_java_tensor_proxies_have_the_dlpack_protocol_on_the_class(java):
    assert hasattr(java.Tensor, "__dlpack__") and hasattr(java.Tensor, "__dlpack_device__")
    with java.Tensor.zeros(java.DataType.INT8, [1]) as t:  # closed: not left to the next test's leak check
        assert isinstance(t, jpype.JClass("io.github.dlpack4j.DlpackExporter"))
