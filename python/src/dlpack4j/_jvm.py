"""Finding a JDK 25, starting the JVM through JPype with dlpack4j's jars, and attaching."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jpype

#: The JDK that the machines dlpack4j is developed on ship; the last place looked at.
FALLBACK_JDK = "/usr/lib/jvm/temurin-25-jdk-amd64"
#: The oldest Java that dlpack4j runs on (FFM upcalls, Float16 conversions).
MIN_JAVA = 25
#: The Java class every other entry point goes through; its absence means our jars are missing.
HOST_CLASS = "io.github.dlpack4j.python.PythonHost"

_JARS_DIR = Path(__file__).parent / "jars"
_lock = threading.RLock()
_host: Any = None


class JdkNotFoundError(RuntimeError):
    """No JDK 25 or newer was found where dlpack4j looks for one."""


def jars() -> list[str]:
    """The dlpack4j jars this package carries, for a program that starts the JVM itself."""
    found = sorted(str(p) for p in _JARS_DIR.glob("dlpack4j-*.jar"))
    if not found:
        raise RuntimeError(
            f"the dlpack4j package has no jars in {_JARS_DIR}: it was not installed from a wheel; "
            "build one with scripts/wheel and install that"
        )
    return found


def jpype_jar() -> str | None:
    """JPype's own support jar (JDK 25 needs it on the class path), or None if JPype has none."""
    here = Path(jpype.__file__).resolve().parent
    for candidate in (
        here.parent / "org.jpype.jar",  # pip's JPype1 keeps it beside the package
        here / "org.jpype.jar",
        Path("/usr/share/java/org.jpype.jar"),  # Debian's python3-jpype
    ):
        if candidate.is_file():
            return str(candidate)
    return None


def java_version(home: str | os.PathLike[str]) -> int | None:
    """The feature version (25 for 25.0.1) of the JDK or JRE at ``home``, or None if it is none."""
    home = Path(home)
    release = home / "release"
    if release.is_file():
        m = re.search(r'^JAVA_VERSION="(\d+)(?:\.(\d+))?', release.read_text(errors="replace"), re.M)
        if m:
            # Java 8 and older call themselves 1.8.
            return int(m.group(2)) if m.group(1) == "1" and m.group(2) else int(m.group(1))
    java = home / "bin" / "java"
    if not java.is_file():
        return None
    try:
        out = subprocess.run(
            [str(java), "-XshowSettings:properties", "-version"], capture_output=True, text=True, timeout=30
        ).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"java\.specification\.version = (?:1\.)?(\d+)", out)
    return int(m.group(1)) if m else None


def _libjvm(home: Path) -> Path | None:
    for rel in ("lib/server/libjvm.so", "jre/lib/amd64/server/libjvm.so", "lib/server/libjvm.dylib"):
        if (home / rel).is_file():
            return home / rel
    return None


def _home_of_libjvm(libjvm: str) -> Path:
    # <home>/lib/server/libjvm.so, or <home>/jre/lib/<arch>/server/libjvm.so for Java 8.
    p = Path(libjvm).resolve().parent.parent
    return p.parent.parent if p.name == "lib" and p.parent.name == "jre" else p.parent


def _jpype_default() -> str | None:
    try:
        return str(jpype.getDefaultJVMPath())
    except Exception:  # JPype raises its own JVMNotFoundException, or others on odd set-ups
        return None


def find_jvm(
    environ: Mapping[str, str] | None = None,
    jpype_default: str | None = "",
    fallback: str = FALLBACK_JDK,
) -> str:
    """The libjvm of a JDK 25 or newer: ``JAVA_HOME``'s, else JPype's default JVM, else the fallback.

    A ``JAVA_HOME`` that is set but older is passed over with a ``RuntimeWarning`` that names it.
    ``environ`` and ``jpype_default`` default to the real ones (``""``: ask JPype).

    Raises:
        JdkNotFoundError: none of them is a JDK 25 or newer; the message names each one tried.

    """
    environ = os.environ if environ is None else environ
    if jpype_default == "":
        jpype_default = _jpype_default()
    tried = []
    java_home = environ.get("JAVA_HOME")
    if java_home:
        version = java_version(java_home)
        lib = _libjvm(Path(java_home))
        if version is not None and version >= MIN_JAVA and lib:
            return str(lib)
        tried.append(f"JAVA_HOME={java_home} ({_describe(version, lib)})")
    else:
        tried.append("JAVA_HOME (not set)")
    if jpype_default:
        version = java_version(_home_of_libjvm(jpype_default))
        if version is not None and version >= MIN_JAVA:
            return _passed_over(tried, jpype_default)
        tried.append(f"JPype's default JVM {jpype_default} ({_describe(version, jpype_default)})")
    home = Path(fallback)
    version = java_version(home)
    lib = _libjvm(home)
    if version is not None and version >= MIN_JAVA and lib:
        return _passed_over(tried, str(lib))
    tried.append(f"{fallback} ({_describe(version, lib)})")
    raise JdkNotFoundError(
        f"dlpack4j needs a JDK {MIN_JAVA} or newer and found none: tried " + "; ".join(tried)
        + f". Set JAVA_HOME to a JDK {MIN_JAVA} (for example Temurin {MIN_JAVA})."
    )


def _describe(version: int | None, lib: object) -> str:
    if version is None:
        return "not a JDK"
    if not lib:
        return f"Java {version} without a libjvm"
    return f"Java {version}, too old"


def _passed_over(tried: list[str], lib: str) -> str:
    if tried and tried[0].startswith("JAVA_HOME="):
        warnings.warn(
            f"dlpack4j: {tried[0]} is older than Java {MIN_JAVA}; using {lib} instead. "
            f"Point JAVA_HOME at a JDK {MIN_JAVA} to choose the JVM yourself.",
            RuntimeWarning,
            stacklevel=4,
        )
    return lib


def start_jvm(*jvm_args: str, classpath: Iterable[str | os.PathLike[str]] = ()) -> None:
    """Starts the JVM through JPype with dlpack4j's jars and attaches dlpack4j to this interpreter.

    The JVM gets ``--enable-native-access=ALL-UNNAMED`` (dlpack4j calls C through FFM), JPype's own
    jar, dlpack4j's jars and ``classpath``, and the options in ``jvm_args``. The JDK is chosen by
    :func:`find_jvm`. Idempotent: later calls return at once. If the program started the JVM itself,
    this only attaches, and says exactly what is missing if dlpack4j's classes are not on its class
    path. Every other function of the package calls this on first use.

    Raises:
        JdkNotFoundError: no JDK 25 or newer was found.
        RuntimeError: the running JVM lacks dlpack4j's classes, or attaching failed.

    """
    global _host
    if _host is not None:
        return
    with _lock:
        if _host is not None:
            return
        if not jpype.isJVMStarted():
            cp = [*jars(), *(str(p) for p in classpath)]
            own = jpype_jar()
            if own:
                cp.insert(0, own)
            args = list(jvm_args)
            if not any(a.startswith("--enable-native-access") for a in args):
                args.insert(0, "--enable-native-access=ALL-UNNAMED")
            jpype.startJVM(find_jvm(), *args, classpath=cp, convertStrings=False)
        elif tuple(classpath):
            warnings.warn(
                "dlpack4j.start_jvm: the JVM is already running, so classpath= is ignored; "
                "pass it to the first start_jvm() call, before anything starts the JVM",
                RuntimeWarning,
                stacklevel=2,
            )
        try:
            host = jpype.JClass(HOST_CLASS)
        except TypeError as e:  # JPype: "Class ... is not found"
            raise RuntimeError(
                "the JVM was started without dlpack4j's classes: start it with "
                f"classpath=dlpack4j.jars() (the jars: {', '.join(jars())}) and "
                "'--enable-native-access=ALL-UNNAMED', or let dlpack4j.start_jvm() start it"
            ) from e
        host.attach()
        _host = host


def host() -> Any:
    """The Java class ``PythonHost``, starting the JVM on first use."""
    if _host is None:
        start_jvm()
    return _host
