"""Fixtures: the session's JVM, the Java classes the tests call, and a leak check."""

from __future__ import annotations

import gc

import jpype
import pytest

from support import start

start()


@pytest.fixture(scope="session")
def java():
    """The Java classes the tests use."""

    class Java:
        Tensor = jpype.JClass("io.github.dlpack4j.Tensor")
        DataType = jpype.JClass("io.github.dlpack4j.DataType")
        Dlpack = jpype.JClass("io.github.dlpack4j.Dlpack")
        Reductions = jpype.JClass("dlpack4j.tests.Reductions")

    return Java


@pytest.fixture
def no_leaks(java):
    """Fails the test if Java exports or native bytes are left over after it."""
    gc.collect()
    java.Reductions.collect()
    exports, native = java.Dlpack.liveExports(), java.Dlpack.nativeBytesInUse()
    yield
    gc.collect()
    java.Reductions.collect()
    assert (java.Dlpack.liveExports(), java.Dlpack.nativeBytesInUse()) == (exports, native)
