"""Child interpreters that exit with tensors shared both ways still alive: the exit code is kept."""

from __future__ import annotations

import time

import pytest

from support import run_child

SHARED = """
import sys, jpype, numpy as np, torch, dlpack4j
a = np.arange(6.0)
into_java = dlpack4j.to_java(a)                      # Java over NumPy's memory, left open
Tensor = jpype.JClass("io.github.dlpack4j.Tensor")
jt = Tensor.zeros(jpype.JClass("io.github.dlpack4j.DataType").FLOAT32, jpype.JArray(jpype.JLong)([4]))
b = np.from_dlpack(jt)                               # NumPy and torch over Java's memory
c = torch.from_dlpack(jt)
face = dlpack4j.from_java(jt)
b[:] = 2
print("READY", into_java.getDouble(jpype.JArray(jpype.JLong)([5])), float(c.sum()), flush=True)
"""

ENDINGS = {
    "the end of the program": ("", 0),
    "sys.exit(3)": ("sys.exit(3)", 3),
    "an exception": ("raise SystemExit(5)", 5),
    "jpype.shutdownJVM() first": (
        "jpype.shutdownJVM()\n"
        "b[1] = 7\n"
        "print('AFTER SHUTDOWN', b.sum(), float(c.sum()), a.sum(), flush=True)\n",
        0,
    ),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_host_exits_cleanly_with_tensors_shared_both_ways(ending):
    code, expected = ENDINGS[ending]
    start = time.monotonic()
    child = run_child(SHARED + code, timeout=60)
    took = time.monotonic() - start
    assert "READY 5.0 8.0" in child.stdout, child.stdout + child.stderr
    assert child.returncode == expected, child.stdout + child.stderr
    assert took < 30
    for sign in ("fatal error", "hs_err", "Segmentation", "Traceback", "core dumped"):
        assert sign not in child.stderr + child.stdout
    if "shutdownJVM" in code:
        assert "AFTER SHUTDOWN 13.0 13.0 15.0" in child.stdout
