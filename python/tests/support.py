"""What the tests share: one JVM for the session (dlpack4j's jars plus a small Java class compiled
here), Java arrays, and child interpreters."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import jpype

import dlpack4j
from dlpack4j._jvm import _home_of_libjvm

HERE = Path(__file__).parent
#: A fixed, pre-touched heap, so that growth of the process RSS is native memory (soak tests).
JVM_ARGS = ("-Xms256m", "-Xmx256m", "-XX:+AlwaysPreTouch")


def _compile_test_classes() -> str:
    javac = _home_of_libjvm(dlpack4j.find_jvm()) / "bin" / "javac"
    out = tempfile.mkdtemp(prefix="dlpack4j-pytest-classes-")
    sources = [str(p) for p in (HERE / "java").glob("*.java")]
    subprocess.run([str(javac), "-d", out, "-cp", os.pathsep.join(dlpack4j.jars()), *sources], check=True)
    return out


def start() -> None:
    """Starts the session's JVM with the test classes on its class path (once)."""
    if not jpype.isJVMStarted():
        dlpack4j.start_jvm(*JVM_ARGS, classpath=[_compile_test_classes()])


def doubles(values: list[float]):
    """A Java double[]."""
    return jpype.JArray(jpype.JDouble)(values)


def longs(values: list[int]):
    """A Java long[] (shapes and indices)."""
    return jpype.JArray(jpype.JLong)(values)


def run_child(
    code: str, env: dict[str, str] | None = None, timeout: float = 30, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a new interpreter (this venv's python), in ``cwd`` if given, returning when it exits."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
