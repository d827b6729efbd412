"""Who lets go first: the Python array, the Java tensor, or (in a child) the JVM; and soaks."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import numpy as np
import psutil
import torch

import dlpack4j
from support import doubles, longs


def wait_until(condition, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        gc.collect()
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def test_the_python_array_dropped_first_lives_until_java_closes_its_tensor(no_leaks):
    a = np.arange(8.0)
    gone = weakref.ref(a)
    t = dlpack4j.to_java(a)
    del a
    gc.collect()
    assert gone() is not None, "Java's import keeps NumPy's array alive"
    assert t.getDouble(7) == 7.0
    t.close()  # on a thread Python made: NumPy's deleter runs before close() returns
    assert gone() is None, "closing the Java tensor ran NumPy's deleter"


def test_closing_on_a_python_thread_releases_the_array_before_close_returns(no_leaks):
    a = np.arange(8.0)
    gone = weakref.ref(a)
    t = dlpack4j.to_java(a)
    del a
    seen: dict[str, bool] = {}

    def close() -> None:
        t.close()
        seen["released"] = gone() is None

    worker = threading.Thread(target=close)
    worker.start()
    worker.join()
    assert seen == {"released": True}


def test_a_java_thread_closing_a_tensor_queues_the_deleter_instead_of_waiting_for_the_gil(java, no_leaks):
    a = np.arange(8.0)
    gone = weakref.ref(a)
    t = dlpack4j.to_java(a)
    del a
    # The close runs on a new Java thread while this thread holds the GIL in a scope: it returns at
    # once, and the array is still alive until the scope ends and the queue is drained.
    assert java.Reductions.closeOnAJavaThreadWhileHoldingTheGil(t, lambda: gone() is not None)
    assert wait_until(lambda: gone() is None, 2.0), "the queued deleter ran after the scope"


def test_the_java_tensor_closed_first_leaves_numpy_reading_java_memory_until_numpy_lets_go(java, no_leaks):
    live = java.Dlpack.liveExports()
    t = java.Tensor.of(doubles([0.0, 1.0, 2.0, 3.0]), longs([4]))
    a = np.from_dlpack(t)
    t.close()
    assert java.Dlpack.liveExports() == live + 1
    np.testing.assert_array_equal(a, [0, 1, 2, 3])
    a[0] = 9
    assert a[0] == 9
    del a
    gc.collect()
    assert java.Dlpack.liveExports() == live


def test_exporting_a_closed_java_tensor_is_a_buffer_error_not_a_crash(java):
    t = java.Tensor.zeros(java.DataType.FLOAT64, [2])
    face = dlpack4j.from_java(t)
    t.close()
    for consume in (np.from_dlpack, torch.from_dlpack):
        try:
            consume(t)
        except BufferError as e:
            assert "closed" in str(e)
        else:  # pragma: no cover
            raise AssertionError(f"{consume} took a closed tensor")
    try:
        face.__dlpack__(max_version=(1, 0))
    except BufferError:
        pass
    else:  # pragma: no cover
        raise AssertionError("a closed tensor exported")


def test_a_java_method_forgetting_a_tensor_releases_the_array_when_java_collects_it(java):
    a = np.arange(3.0)
    gone = weakref.ref(a)
    java.Reductions.keep(a)
    del a
    gc.collect()
    assert gone() is not None
    java.Reductions.drop()
    assert wait_until(lambda: (java.Reductions.collect(), gone() is None)[1]), "the Cleaner never ran the deleter"


def test_a_java_method_closing_its_tensor_releases_the_array_before_it_returns(java):
    """JPype lets the GIL go around Java calls; the close, on this thread that Python made, takes
    it for NumPy's deleter, as JPype would right after."""
    a = np.arange(3.0)
    gone = weakref.ref(a)
    assert java.Reductions.sumAndClose(a) == 3.0
    del a
    assert gone() is None


def rss() -> int:
    return psutil.Process().memory_info().rss


def test_soak_to_java_and_close_and_numpy_from_java_tensors_keep_rss_flat(java, no_leaks):
    n = 100_000
    a = np.ones(16, np.float32)
    t = java.Tensor.zeros(java.DataType.FLOAT32, [16])
    try:
        marks = []
        for _half in range(2):
            for _ in range(n // 2):
                u = dlpack4j.to_java(a)
                u.close()
                np.from_dlpack(t)
            gc.collect()
            java.Reductions.collect()
            marks.append(rss())
        grown = (marks[1] - marks[0]) / 2**20
        assert grown < 32, f"RSS grew by {grown:.1f} MiB over the second half"
    finally:
        t.close()
