"""Bad input gets a clear Python exception of the right type; a JDK too old is named."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import dlpack4j
from support import run_child


class RefusingProducer:
    """A DLPack producer that cannot export, as the protocol says it should refuse."""

    def __dlpack__(self, **kwargs):
        raise BufferError("not exportable today")

    def __dlpack_device__(self):
        return (1, 0)


class CustomError(Exception):
    pass


class RaisingProducer(RefusingProducer):
    def __dlpack__(self, **kwargs):
        raise CustomError("the producer's own error")


class NotACapsuleProducer(RefusingProducer):
    def __dlpack__(self, **kwargs):
        return "a string"


def test_to_java_of_an_object_without_dlpack_is_a_type_error():
    for bad in (3, "text", [1.0, 2.0], object()):
        with pytest.raises(TypeError, match="__dlpack__"):
            dlpack4j.to_java(bad)


def test_a_producers_buffer_error_keeps_its_type_message_and_traceback():
    with pytest.raises(BufferError, match="not exportable today") as info:
        dlpack4j.to_java(RefusingProducer())
    assert any(f.name == "__dlpack__" for f in info.traceback), "the producer's own frame is kept"


def test_a_producers_own_exception_type_is_kept():
    with pytest.raises(CustomError, match="own error"):
        dlpack4j.to_java(RaisingProducer())


def test_a_producer_returning_something_else_than_a_capsule_is_a_buffer_error():
    with pytest.raises(BufferError, match="not a DLPack capsule"):
        dlpack4j.to_java(NotACapsuleProducer())


def test_copy_must_be_a_bool_or_none():
    with pytest.raises(TypeError, match="copy"):
        dlpack4j.to_java(np.arange(3), copy="yes")


def test_from_java_of_something_else_than_a_java_exporter_is_a_type_error():
    for bad in (np.arange(3), 3):
        with pytest.raises(TypeError, match="DlpackExporter"):
            dlpack4j.from_java(bad)


def test_using_a_closed_java_tensor_raises_a_python_exception(java):
    t = dlpack4j.to_java(np.arange(3.0))
    t.close()
    with pytest.raises(Exception, match="closed"):
        t.getDouble(0)
    with pytest.raises(BufferError, match="closed"):
        np.from_dlpack(t)


def fake_jdk(root: Path, version: str) -> Path:
    """A directory shaped like a JDK of ``version`` (its release file and a libjvm)."""
    (root / "lib" / "server").mkdir(parents=True)
    (root / "lib" / "server" / "libjvm.so").write_bytes(b"")
    (root / "release").write_text(f'JAVA_VERSION="{version}"\n')
    return root


def test_a_java_home_older_than_25_with_nothing_else_found_is_named_in_the_error(tmp_path):
    old = fake_jdk(tmp_path / "jdk17", "17.0.15")
    with pytest.raises(dlpack4j.JdkNotFoundError) as info:
        dlpack4j.find_jvm({"JAVA_HOME": str(old)}, jpype_default=None, fallback=str(tmp_path / "none"))
    message = str(info.value)
    assert f"JAVA_HOME={old} (Java 17, too old)" in message
    assert "Set JAVA_HOME to a JDK 25" in message


def test_a_java_home_older_than_25_is_passed_over_with_a_warning_naming_it(tmp_path):
    old = fake_jdk(tmp_path / "jdk11", "11.0.2")
    new = fake_jdk(tmp_path / "jdk25", "25.0.1")
    with pytest.warns(RuntimeWarning, match=f"JAVA_HOME={old}"):
        found = dlpack4j.find_jvm({"JAVA_HOME": str(old)}, jpype_default=None, fallback=str(new))
    assert found == str(new / "lib" / "server" / "libjvm.so")
    assert dlpack4j.find_jvm({"JAVA_HOME": str(new)}, jpype_default=None, fallback="/nowhere") == found


def test_a_real_start_with_an_old_java_home_warns_and_starts_jdk_25(tmp_path):
    old = fake_jdk(tmp_path / "jdk8", "1.8.0_412")
    child = run_child(
        "import numpy as np, dlpack4j\n"
        "t = dlpack4j.to_java(np.arange(4.0))\n"
        "print('SUM', sum(t.toDoubleArray()))\n",
        env={"JAVA_HOME": str(old), "PYTHONWARNINGS": "always"},
    )
    assert child.returncode == 0, child.stderr
    assert "SUM 6.0" in child.stdout
    assert f"JAVA_HOME={old} (Java 8, too old)" in child.stderr


def test_start_jvm_on_a_jvm_started_without_our_jars_says_what_is_missing():
    child = run_child(
        "import jpype, dlpack4j\n"
        "from dlpack4j._jvm import jpype_jar\n"
        "jpype.startJVM(dlpack4j.find_jvm(), classpath=[jpype_jar()])\n"
        "try:\n"
        "    dlpack4j.start_jvm()\n"
        "except RuntimeError as e:\n"
        "    print('ERROR', e)\n",
    )
    assert child.returncode == 0, child.stderr
    assert "ERROR the JVM was started without dlpack4j's classes" in child.stdout
    assert "classpath=dlpack4j.jars()" in child.stdout


def test_the_package_carries_its_jars():
    names = sorted(Path(p).name.rsplit("-", 2)[0] for p in dlpack4j.jars())
    assert names == ["dlpack4j-core", "dlpack4j-python"]
    assert all(os.path.getsize(p) > 10_000 for p in dlpack4j.jars())
