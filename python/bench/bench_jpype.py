"""Times dlpack4j's exchanges under a JPype-hosted JVM against NumPy's own and JPype's conversions.

Run with the interpreter that has the wheel installed (``scripts/bench-python`` does it all). Every
figure is the best of several repeats of a timed loop, and each ratio compares two figures taken in
this one process, back to back, so that the machine's slow and fast periods cancel out.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import jpype
import numpy as np

import dlpack4j

MIB = 1 << 20


def best_ns(fn: Callable[[], object], loops: int, repeats: int) -> float:
    """The fastest of ``repeats`` runs of ``loops`` calls of ``fn``, in ns per call."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter_ns() - start) / loops)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--loops", type=int, default=20_000, help="calls per timed loop (small exchanges)")
    parser.add_argument("--repeats", type=int, default=7, help="timed loops per figure; the best is kept")
    args = parser.parse_args()
    loops, repeats = args.loops, args.repeats
    dlpack4j.start_jvm()
    tensor_cls = jpype.JClass("io.github.dlpack4j.Tensor")
    data_type = jpype.JClass("io.github.dlpack4j.DataType")

    def java_tensor(elements: int):
        return tensor_cls.zeros(data_type.FLOAT32, jpype.JArray(jpype.JLong)([elements]))

    small, big = np.ones(1, np.float32), np.ones(64 * MIB // 4, np.float32)
    jsmall, jbig = java_tensor(1), java_tensor(64 * MIB // 4)

    def to_java_and_close(a: np.ndarray) -> Callable[[], None]:
        def run() -> None:
            dlpack4j.to_java(a).close()

        return run

    face = dlpack4j.from_java(jsmall)
    jarray = jpype.JArray(jpype.JFloat)(big)
    rows: list[tuple[str, float]] = []

    def figure(name: str, fn: Callable[[], object], n: int = loops) -> float:
        fn()  # warm
        ns = best_ns(fn, n, repeats)
        rows.append((name, ns))
        return ns

    for _ in range(2):  # a first pass warms the JIT and the caches; the second is reported
        rows.clear()
        nd_small = figure("numpy.from_dlpack(ndarray), 1 element", lambda: np.from_dlpack(small))
        face_small = figure("numpy.from_dlpack(dlpack4j.from_java(jt)), cached", lambda: np.from_dlpack(face))
        proxy_small = figure("numpy.from_dlpack(java_tensor_proxy), 1 element", lambda: np.from_dlpack(jsmall))
        proxy_big = figure("numpy.from_dlpack(java_tensor_proxy), 64 MiB", lambda: np.from_dlpack(jbig))
        to_small = figure("dlpack4j.to_java(ndarray) + close, 1 element", to_java_and_close(small))
        to_big = figure("dlpack4j.to_java(ndarray) + close, 64 MiB", to_java_and_close(big))
        copy_n = max(3, repeats // 2)
        jpype_to = figure("JPype: JArray(JFloat)(ndarray), 64 MiB (copies)", lambda: jpype.JArray(jpype.JFloat)(big), 1)
        jpype_from = figure("JPype: np.asarray(JArray), 64 MiB (copies)", lambda: np.asarray(jarray), copy_n)
        if hasattr(jpype.JArray, "of"):
            figure("JPype: JArray.of(ndarray), 64 MiB (copies)", lambda: jpype.JArray.of(big), copy_n)

    width = max(len(n) for n, _ in rows)
    print(f"{'exchange':<{width}}  {'ns per call':>14}")
    for name, ns in rows:
        print(f"{name:<{width}}  {ns:>14,.0f}")
    print()
    print("In the same process:")
    print(f"  numpy.from_dlpack(java proxy) 1 element: {proxy_small / 1000:.2f} us (target <= 5 us); "
          f"64 MiB / 1 element: {proxy_big / proxy_small:.2f}x (target: within 10%)")
    print(f"  to_java + close 1 element: {to_small / 1000:.2f} us (target <= 5 us); "
          f"64 MiB / 1 element: {to_big / to_small:.2f}x (target: within 10%)")
    print(f"  numpy.from_dlpack(from_java(jt)) / numpy.from_dlpack(ndarray): {face_small / nd_small:.2f}x "
          "(target <= 2x)")
    print(f"  64 MiB into Java: JPype's copy / dlpack4j.to_java + close: {jpype_to / to_big:,.0f}x (target >= 1,000x)")
    print(f"  64 MiB out of Java: JPype's np.asarray copy / numpy.from_dlpack(proxy): {jpype_from / proxy_big:,.0f}x")
    jsmall.close()
    jbig.close()


if __name__ == "__main__":
    main()
