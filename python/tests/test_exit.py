"""Child interpreters that exit with tensors shared both ways still alive: the exit code is kept.

NumPy and torch check a DLPack deleter for NULL when they call it; jaxlib checks it only when it
imports, and a capsule keeps the destructor it was made with: each of these functions must stay
callable after the JVM is gone."""

from __future__ import annotations

import time

import pytest

from support import run_child

SHARED = """
import sys, jpype, numpy as np, torch, jax.numpy as jnp, dlpack4j
a = np.arange(6.0)
into_java = dlpack4j.to_java(a)                      # Java over NumPy's and JAX's memory, left open
into_java_from_jax = dlpack4j.to_java(jnp.arange(3.0))
Tensor = jpype.JClass("io.github.dlpack4j.Tensor")
jt = Tensor.zeros(jpype.JClass("io.github.dlpack4j.DataType").FLOAT32, jpype.JArray(jpype.JLong)([4]))
b = np.from_dlpack(jt)                               # NumPy, torch and JAX over Java's memory
c = torch.from_dlpack(jt)
d = jnp.from_dlpack(jt)
face = dlpack4j.from_java(jt)
capsule = face.__dlpack__(max_version=(1, 0))        # never consumed: its destructor deletes the export
b[:] = 2
print("READY", into_java.getDouble(jpype.JArray(jpype.JLong)([5])), float(c.sum()), float(d.sum()), flush=True)
"""

AFTER_SHUTDOWN = (
    "jpype.shutdownJVM()\n"
    "b[1] = 7\n"
    "print('AFTER SHUTDOWN', b.sum(), float(c.sum()), float(d.sum()), a.sum(), flush=True)\n"
    "del d, capsule\n"  # JAX's deleter call and the capsule's destructor, with the JVM gone
    "print('DROPPED', flush=True)\n"
    "try:\n"
    "    np.from_dlpack(face)\n"
    "except SystemError:\n"  # its __dlpack__ returns nothing now, instead of calling into the JVM
    "    print('NOTHING EXPORTED', flush=True)\n"
)

ENDINGS = {
    "the end of the program": ("", 0),
    "sys.exit(3)": ("sys.exit(3)", 3),
    "an exception": ("raise SystemExit(5)", 5),
    "jpype.shutdownJVM() first": (AFTER_SHUTDOWN, 0),
    "jpype.shutdownJVM(), then sys.exit(3)": (AFTER_SHUTDOWN + "sys.exit(3)", 3),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_host_exits_cleanly_with_tensors_shared_both_ways(ending, tmp_path):
    code, expected = ENDINGS[ending]
    start = time.monotonic()
    child = run_child(SHARED + code, timeout=60, cwd=tmp_path)  # where the JVM would write a crash report
    took = time.monotonic() - start
    assert "READY 5.0 8.0 8.0" in child.stdout, child.stdout + child.stderr
    assert child.returncode == expected, child.stdout + child.stderr
    assert took < 30
    for sign in ("fatal error", "hs_err", "Segmentation", "Traceback", "core dumped"):
        assert sign not in child.stderr + child.stdout
    assert not list(tmp_path.glob("hs_err_pid*.log"))
    if "shutdownJVM" in code:
        assert "AFTER SHUTDOWN 13.0 13.0 13.0 15.0\nDROPPED\nNOTHING EXPORTED" in child.stdout
