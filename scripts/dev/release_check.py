"""Validates what ``scripts/release --dry-run`` staged in target/release/ (it runs this).

The Maven bundle: the repository layout, each artifact's POM, jar, sources and Javadoc jars, a
``.md5`` and ``.sha1`` beside every file that match it (and a ``.asc`` that GPG verifies, with
``--signed``), and in each POM what a repository of published artifacts requires: name,
description, url, licenses, scm and developers (own or from the parent POM). The wheel: what
``twine check --strict`` checks (the required fields, a long description with its content type,
rendered as PyPI renders it), and its license expression and license file, classifiers and
project URLs.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from email.parser import Parser
from pathlib import Path

NS = {"m": "http://maven.apache.org/POM/4.0.0"}
GROUP_PATH = "io/github/dlpack4j"


def text(pom: ET.Element, path: str) -> str:
    """The stripped text at ``path`` in ``pom``, or ''."""
    found = pom.find(path, NS)
    return (found.text or "").strip() if found is not None else ""


def check_pom(pom_file: Path, parent: ET.Element | None, problems: list[str]) -> ET.Element | None:
    """A POM has name and description of its own, and url, licenses, scm and developers."""
    try:
        pom = ET.parse(pom_file).getroot()
    except ET.ParseError as e:
        problems.append(f"{pom_file.name}: not well-formed XML: {e}")
        return None
    for own in ("m:name", "m:description"):
        if not text(pom, own):
            problems.append(f"{pom_file.name}: no <{own[2:]}>")
    for inherited in ("m:url", "m:licenses/m:license/m:name", "m:licenses/m:license/m:url", "m:scm/m:url",
                      "m:scm/m:connection", "m:developers/m:developer/m:name"):
        if not text(pom, inherited) and (parent is None or not text(parent, inherited)):
            problems.append(f"{pom_file.name}: no <{inherited.replace('m:', '')}>, neither its own nor the parent's")
    license_name = text(pom, "m:licenses/m:license/m:name") or (parent is not None and text(
        parent, "m:licenses/m:license/m:name"))
    if license_name and license_name != "Apache-2.0":
        problems.append(f"{pom_file.name}: license {license_name}, expected Apache-2.0")
    return pom


def check_checksums(folder: Path, signed: bool, problems: list[str]) -> None:
    """Every file has matching .md5 and .sha1 files (and a verified .asc when signed)."""
    for file in sorted(folder.rglob("*")):
        if not file.is_file() or file.suffix in (".md5", ".sha1", ".asc"):
            continue
        data = file.read_bytes()
        for suffix, digest in ((".md5", hashlib.md5), (".sha1", hashlib.sha1)):
            sum_file = file.with_name(file.name + suffix)
            if not sum_file.exists():
                problems.append(f"{file.name}: no {suffix}")
            elif sum_file.read_text().strip() != digest(data).hexdigest():
                problems.append(f"{sum_file.name} does not match {file.name}")
        if signed:
            signature = file.with_name(file.name + ".asc")
            verified = signature.exists() and subprocess.run(
                ["gpg", "--batch", "--verify", str(signature), str(file)], capture_output=True, check=False
            ).returncode == 0
            if not verified:
                problems.append(f"{file.name}: no .asc signature that gpg verifies")


def check_maven(maven: Path, artifacts: list[str], version: str, signed: bool, problems: list[str]) -> None:
    """The bundle's layout, POMs, jars and checksums."""
    parent_pom = maven / GROUP_PATH / "dlpack4j-parent" / version / f"dlpack4j-parent-{version}.pom"
    parent = check_pom(parent_pom, None, problems) if parent_pom.exists() else None
    for artifact in artifacts:
        folder = maven / GROUP_PATH / artifact / version
        pom_file = folder / f"{artifact}-{version}.pom"
        if not pom_file.exists():
            problems.append(f"{artifact}: no {pom_file.relative_to(maven)}")
            continue
        pom = check_pom(pom_file, parent, problems) if artifact != "dlpack4j-parent" else parent
        if pom is None or text(pom, "m:packaging") == "pom":
            continue
        for suffix, must_hold in ((".jar", ".class"), ("-sources.jar", ".java"), ("-javadoc.jar", "index.html")):
            jar = folder / f"{artifact}-{version}{suffix}"
            if not jar.exists():
                problems.append(f"{artifact}: no {jar.name}")
                continue
            with zipfile.ZipFile(jar) as z:
                if not any(name.endswith(must_hold) for name in z.namelist()):
                    problems.append(f"{jar.name} holds no {must_hold}")
    extra = sorted({p.name for p in (maven / GROUP_PATH).iterdir()} - set(artifacts))
    if extra:
        problems.append(f"artifacts not meant to be published: {extra}")
    check_checksums(maven, signed, problems)


def check_wheel(wheel: Path, problems: list[str]) -> None:
    """The wheel's metadata: license, classifiers, project URLs, a README that renders, the jars."""
    import readme_renderer.markdown

    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(z.read(metadata_name).decode())
        license_files = [n for n in names if ".dist-info/licenses/" in n]
        license_text = z.read(license_files[0]).decode() if license_files else ""
    for required in ("Metadata-Version", "Name", "Version"):
        if not metadata.get(required):
            problems.append(f"{wheel.name}: no {required}")
    if metadata.get("License-Expression") != "Apache-2.0":
        problems.append(f"{wheel.name}: License-Expression is {metadata.get('License-Expression')!r}")
    if "Apache License" not in license_text or "Version 2.0" not in license_text:
        problems.append(f"{wheel.name}: no Apache-2.0 license file in .dist-info/licenses/")
    classifiers = metadata.get_all("Classifier") or []
    if not any(c.startswith("Programming Language :: Python :: 3.") for c in classifiers):
        problems.append(f"{wheel.name}: no classifier naming a Python version")
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL") or [])
    for name in ("Homepage", "Documentation", "Source", "Issues"):
        if not urls.get(name, "").startswith("https://"):
            problems.append(f"{wheel.name}: no Project-URL {name}")
    if metadata.get("Description-Content-Type") != "text/markdown":
        problems.append(f"{wheel.name}: Description-Content-Type is {metadata.get('Description-Content-Type')!r}")
    description = metadata.get_payload()
    if not description.strip() or readme_renderer.markdown.render(description) is None:
        problems.append(f"{wheel.name}: the README does not render")
    if not any(n.startswith("dlpack4j/jars/dlpack4j-core-") for n in names):
        problems.append(f"{wheel.name}: the dlpack4j jars are not inside")


def main() -> int:
    """Checks target/release; prints each problem and exits 1 if there is one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("release", type=Path)
    parser.add_argument("--version", required=True)
    parser.add_argument("--artifacts", nargs="+", required=True)
    parser.add_argument("--signed", action="store_true", help="every file must have a .asc that gpg verifies")
    args = parser.parse_args()
    problems: list[str] = []
    check_maven(args.release / "maven", args.artifacts, args.version, args.signed, problems)
    bundle = args.release / f"dlpack4j-{args.version}-bundle.zip"
    if not bundle.exists():
        problems.append(f"no {bundle.name}")
    wheels = sorted((args.release / "python").glob("dlpack4j-*.whl"))
    if len(wheels) != 1:
        problems.append(f"expected one wheel in python/, found {len(wheels)}")
    else:
        check_wheel(wheels[0], problems)
    for problem in problems:
        print(f"release: {problem}", file=sys.stderr)
    if problems:
        return 1
    files = sum(1 for p in (args.release / "maven").rglob("*") if p.is_file())
    print(f"release: {len(args.artifacts)} Maven artifacts ({files} files with checksums) and {wheels[0].name}: valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
