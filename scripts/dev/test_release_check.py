"""release_check's own tests: a staged release with one thing wrong is refused, naming it.

Run by scripts/release --dry-run after it validated the real staging folder. Each test stages a
small, valid release in a temporary folder (a parent POM, one module with its three jars, a
wheel), breaks one thing, and reads the problems found.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

import release_check

VERSION = "1.0.0"
PARENT = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <groupId>io.github.dlpack4j</groupId><artifactId>dlpack4j-parent</artifactId><version>{VERSION}</version>
  <packaging>pom</packaging><name>dlpack4j</name><description>d</description>
  <url>https://github.com/dlpack4j/dlpack4j</url>
  <licenses><license><name>Apache-2.0</name><url>https://www.apache.org/licenses/LICENSE-2.0.txt</url></license></licenses>
  <developers><developer><name>The dlpack4j developers</name></developer></developers>
  <scm><url>https://github.com/dlpack4j/dlpack4j</url><connection>scm:git:x</connection></scm>
</project>"""
MODULE = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <artifactId>dlpack4j-core</artifactId><name>dlpack4j-core</name><description>d</description>
</project>"""
METADATA = """Metadata-Version: 2.4
Name: dlpack4j
Version: 1.0.0
License-Expression: Apache-2.0
License-File: LICENSE
Classifier: Programming Language :: Python :: 3.11
Project-URL: Homepage, https://github.com/dlpack4j/dlpack4j
Project-URL: Documentation, https://github.com/dlpack4j/dlpack4j/blob/main/docs/python-package.md
Project-URL: Source, https://github.com/dlpack4j/dlpack4j
Project-URL: Issues, https://github.com/dlpack4j/dlpack4j/issues
Description-Content-Type: text/markdown

# dlpack4j

Zero-copy tensors.
"""


def stage(root: Path, metadata: str = METADATA, parent: str = PARENT) -> Path:
    folder = root / "maven/io/github/dlpack4j"
    (folder / "dlpack4j-parent" / VERSION).mkdir(parents=True)
    (folder / "dlpack4j-parent" / VERSION / f"dlpack4j-parent-{VERSION}.pom").write_text(parent)
    module = folder / "dlpack4j-core" / VERSION
    module.mkdir(parents=True)
    (module / f"dlpack4j-core-{VERSION}.pom").write_text(MODULE)
    for suffix, entry in ((".jar", "A.class"), ("-sources.jar", "A.java"), ("-javadoc.jar", "index.html")):
        with zipfile.ZipFile(module / f"dlpack4j-core-{VERSION}{suffix}", "w") as z:
            z.writestr(entry, "x")
    for file in [p for p in (root / "maven").rglob("*") if p.is_file()]:
        file.with_name(file.name + ".md5").write_text(hashlib.md5(file.read_bytes()).hexdigest())
        file.with_name(file.name + ".sha1").write_text(hashlib.sha1(file.read_bytes()).hexdigest())
    (root / f"dlpack4j-{VERSION}-bundle.zip").write_bytes(b"")
    (root / "python").mkdir()
    with zipfile.ZipFile(root / "python" / "dlpack4j-1.0.0-py3-none-any.whl", "w") as z:
        z.writestr("dlpack4j-1.0.0.dist-info/METADATA", metadata)
        z.writestr("dlpack4j-1.0.0.dist-info/licenses/LICENSE", "Apache License\nVersion 2.0, January 2004\n")
        z.writestr("dlpack4j/jars/dlpack4j-core-1.0.0.jar", "")
    return root


def problems(root: Path) -> list[str]:
    found: list[str] = []
    release_check.check_maven(root / "maven", ["dlpack4j-parent", "dlpack4j-core"], VERSION, False, found)
    release_check.check_wheel(next((root / "python").glob("*.whl")), found)
    return found


@pytest.fixture
def staged(tmp_path):
    return stage(tmp_path)


def core(root: Path, suffix: str) -> Path:
    return root / f"maven/io/github/dlpack4j/dlpack4j-core/{VERSION}/dlpack4j-core-{VERSION}{suffix}"


def test_a_complete_release_passes(staged):
    assert problems(staged) == []


def test_a_file_changed_after_its_checksums_is_refused(staged):
    core(staged, ".pom").write_text(MODULE.replace("<description>d</description>", "<description>e</description>"))
    assert problems(staged) == [f"dlpack4j-core-{VERSION}.pom.md5 does not match dlpack4j-core-{VERSION}.pom",
                                f"dlpack4j-core-{VERSION}.pom.sha1 does not match dlpack4j-core-{VERSION}.pom"]


def test_a_missing_javadoc_jar_is_refused(staged):
    for file in core(staged, "").parent.glob("*-javadoc.jar*"):
        file.unlink()
    assert problems(staged) == [f"dlpack4j-core: no dlpack4j-core-{VERSION}-javadoc.jar"]


def test_a_pom_without_a_license_anywhere_is_refused(tmp_path):
    found = problems(stage(tmp_path, parent=PARENT.replace("<name>Apache-2.0</name>", "")))
    assert f"dlpack4j-core-{VERSION}.pom: no <licenses/license/name>, neither its own nor the parent's" in found


def test_a_wheel_without_a_license_expression_or_project_urls_is_refused(tmp_path):
    metadata = "\n".join(line for line in METADATA.splitlines()
                         if not line.startswith(("License-Expression", "Project-URL: Issues")))
    found = problems(stage(tmp_path, metadata))
    assert found == ["dlpack4j-1.0.0-py3-none-any.whl: License-Expression is None",
                     "dlpack4j-1.0.0-py3-none-any.whl: no Project-URL Issues"]
