"""The wheel claims exactly the CPython versions that scripts/test runs the embedded runtime on."""

from __future__ import annotations

import re
from importlib.metadata import metadata
from pathlib import Path

LIB_SH = Path(__file__).resolve().parents[2] / "scripts" / "lib.sh"


def test_the_wheels_classifiers_name_exactly_the_tested_cpython_versions():
    tested = re.search(r'^DLPACK4J_CPYTHON_VERSIONS="([^"]*)"', LIB_SH.read_text(), re.MULTILINE)
    assert tested is not None, f"no DLPACK4J_CPYTHON_VERSIONS in {LIB_SH}"
    versions = tested.group(1).split()
    meta = metadata("dlpack4j")
    classified = [
        c.removeprefix("Programming Language :: Python :: ")
        for c in meta.get_all("Classifier") or []
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert classified == versions
    assert meta["Requires-Python"] == f">={versions[0]}"
