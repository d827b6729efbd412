"""Tensors across JPype: Python producers as Java tensors, Java exporters as DLPack producers."""

from __future__ import annotations

import builtins
import ctypes
from typing import Any

import jpype

from ._jvm import host

_EXPORTER = "io.github.dlpack4j.DlpackExporter"
_TENSOR = "io.github.dlpack4j.Tensor"
#: Where a Java proxy keeps its ``dlpack4j.Tensor`` object (JPype proxies have a ``__dict__``).
_FACE = "_dlpack4j_tensor"

_py_decref = ctypes.pythonapi.Py_DecRef
_py_decref.argtypes = [ctypes.py_object]
_py_decref.restype = None


def _take(address: int) -> Any:
    """The object at ``address``, taking over the new reference that Java handed out with it."""
    obj = ctypes.cast(int(address), ctypes.py_object).value  # a reference of our own...
    _py_decref(obj)  # ...so drop the one Java gave us
    return obj


def _is_capsule(x: object) -> bool:
    return type(x).__name__ == "PyCapsule"


class _Java:
    """Java classes looked up once the JVM runs (JPype needs a running JVM for them)."""

    python_exception: Any = None
    dlpack_exception: Any = None
    exporter: Any = None

    @classmethod
    def load(cls) -> type[_Java]:
        if cls.exporter is None:
            host()
            cls.python_exception = jpype.JClass("io.github.dlpack4j.python.PythonException")
            cls.dlpack_exception = jpype.JClass("io.github.dlpack4j.DlpackException")
            cls.exporter = jpype.JClass(_EXPORTER)
        return cls


def _python_error(e: BaseException) -> BaseException:
    """The Python exception for a Java exception from dlpack4j, or ``e`` itself for any other."""
    java = _Java.load()
    if isinstance(e, java.python_exception):
        address = int(host().exceptionObject(e))
        if address:
            return _take(address)  # the producer's own exception object, traceback and all
        kind = getattr(builtins, str(e.pythonType()), None)
        if isinstance(kind, type) and issubclass(kind, Exception):
            return kind(str(e.pythonMessage()))
        return RuntimeError(f"{e.pythonType()}: {e.pythonMessage()}")
    if isinstance(e, java.dlpack_exception):
        return BufferError(str(e.getMessage()))
    return e


def to_java(x: object, copy: bool | None = None) -> Any:
    """A Java ``io.github.dlpack4j.Tensor`` over the memory of ``x``, zero-copy.

    ``x`` is anything with ``__dlpack__`` (NumPy, PyTorch and JAX arrays, ...) or a DLPack capsule.
    The Java tensor owns the import: ``t.close()``, or leaving ``with t:``, runs the producer's
    deleter (the Java ``Cleaner`` does it for a tensor nobody closes). It is read-only when the
    producer says so. ``copy``: ``True`` always copies, ``False`` never does (``BufferError`` if the
    producer would have to), ``None`` copies only if needed. Starts the JVM on first use.

    Raises:
        TypeError: ``x`` does not speak DLPack.
        BufferError: the producer cannot export ``x`` (its own exception, any other type kept too),
            or what it exported breaks the DLPack rules.

    """
    if not (_is_capsule(x) or hasattr(x, "__dlpack__")):
        raise TypeError(f"dlpack4j.to_java needs an object with __dlpack__ or a DLPack capsule, not {type(x).__name__}")
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"copy must be True, False or None, not {copy!r}")
    h = host()
    try:
        # x stays alive in this frame for the whole call, so its address stays valid.
        return h.importObject(id(x), copy)
    except jpype.JException as e:
        raise _python_error(e) from None


def from_java(tensor: Any) -> Any:
    """The ``dlpack4j.Tensor`` Python object for a Java ``DlpackExporter`` (every Java ``Tensor``).

    It has ``__dlpack__`` and ``__dlpack_device__`` and the DLPack C Exchange API; each
    ``__dlpack__`` call is a fresh zero-copy export. It stands for the Java object as it is: once a
    Java tensor is closed, exporting it raises ``BufferError`` (arrays already made keep their
    memory). Made once per proxy and kept on it, so repeated consumption does not cross JPype.

    Raises:
        TypeError: ``tensor`` is not a Java ``DlpackExporter``.

    """
    try:
        return tensor.__dict__[_FACE]
    except (KeyError, AttributeError):
        pass
    if not isinstance(tensor, _Java.load().exporter):
        raise TypeError(f"dlpack4j.from_java needs a Java {_EXPORTER}, not {type(tensor).__name__}")
    try:
        face = _take(host().exporterObject(tensor))
    except jpype.JException as e:
        raise _python_error(e) from None
    return tensor.__dict__.setdefault(_FACE, face)


@jpype.JImplementationFor(_EXPORTER)
class _DlpackProducer:
    """``__dlpack__`` and ``__dlpack_device__`` on every JPype proxy of a Java ``DlpackExporter``."""

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        """A fresh export of this Java object in a single-use capsule, as ``from_java(self)`` gives."""
        return from_java(self).__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(device_type, device_id)`` of this Java object's data."""
        return from_java(self).__dlpack_device__()


@jpype.JConversion(_TENSOR, attribute="__dlpack__")
def _as_tensor(_cls: Any, x: object) -> Any:
    """Lets Java methods whose parameter is a ``Tensor`` take NumPy, PyTorch and JAX arrays."""
    return to_java(x)
