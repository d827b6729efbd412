"""Checks the documentation's samples and links (run by scripts/doctest, which scripts/test runs).

Java samples: every ```java block in README.md and docs/*.md, and every inline ``{@snippet :``
in the Javadoc of the main types, is compiled against the reactor's classes and dependencies in
one javac call. A block that declares a top-level type (or starts with ``package``/``import``) is
a compilation unit; any other block is a statement block, wrapped in a method (``throws
Exception``) of a generated class that imports ``java.util.*``, ``java.nio.*``,
``java.lang.foreign.*`` and the packages of the dlpack4j modules present in the reactor. A block
preceded by the line ``<!-- doctest: run -->`` is also run, all of them in one JVM, and what it
prints must equal the next ```text block after it; ``[...]`` in that text matches any run of
characters within a line (an address, a timing).

Python samples: every ```python block of the Python package's docs (python/README.md,
docs/python*.md) and of README.md runs as a script of its own under .venv-jpype, where the wheel is installed.

Links: every relative link (and #anchor) in README.md, docs/*.md and python/README.md resolves,
and so does every link to this repository's own files on GitHub.

A failure names the file and the line of the sample. Exit code 0 when everything passed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN_MARKER = "<!-- doctest: run -->"
REPOSITORY_URL = "https://github.com/dlpack4j/dlpack4j"
# The main types whose Javadoc snippets are compiled.
SNIPPET_SOURCES = (
    "dlpack4j-core/src/main/java/io/github/dlpack4j/Tensor.java",
    "dlpack4j-core/src/main/java/io/github/dlpack4j/ManagedTensor.java",
    "dlpack4j-core/src/main/java/io/github/dlpack4j/Dlpack.java",
    "dlpack4j-python/src/main/java/io/github/dlpack4j/python/Python.java",
    "dlpack4j-python/src/main/java/io/github/dlpack4j/python/PyObject.java",
    "dlpack4j-python/src/main/java/io/github/dlpack4j/python/ImportRequest.java",
    "dlpack4j-python/src/main/java/io/github/dlpack4j/python/PythonDlpack.java",
    "dlpack4j-arrow/src/main/java/io/github/dlpack4j/arrow/ArrowTensors.java",
    "dlpack4j-image/src/main/java/io/github/dlpack4j/image/ImageTensors.java",
    "dlpack4j-model/src/main/java/io/github/dlpack4j/model/PythonModel.java",
    "dlpack4j-model/src/main/java/io/github/dlpack4j/model/ModelResult.java",
    "dlpack4j-model/src/main/java/io/github/dlpack4j/model/SentenceTransformers.java",
    "dlpack4j-langchain4j/src/main/java/io/github/dlpack4j/langchain4j/PythonEmbeddingModel.java",
)
# What a statement block sees, per reactor module (a module not in the reactor adds nothing).
MODULE_IMPORTS = {
    "dlpack4j-core": ("io.github.dlpack4j",),
    "dlpack4j-python": ("io.github.dlpack4j.python",),
    "dlpack4j-arrow": (
        "io.github.dlpack4j.arrow",
        "org.apache.arrow.memory",
        "org.apache.arrow.vector",
        "org.apache.arrow.vector.complex",
    ),
    "dlpack4j-onnxruntime": ("io.github.dlpack4j.onnxruntime", "ai.onnxruntime"),
    "dlpack4j-image": ("io.github.dlpack4j.image", "java.awt.image", "javax.imageio", "java.nio.file"),
    "dlpack4j-model": ("io.github.dlpack4j.model", "java.time", "java.util.concurrent", "java.nio.file"),
    "dlpack4j-langchain4j": (
        "io.github.dlpack4j.langchain4j",
        "dev.langchain4j.model.chat.response",
        "dev.langchain4j.data.embedding",
        "dev.langchain4j.data.segment",
        "dev.langchain4j.model.output",
        "dev.langchain4j.store.embedding",
    ),
    # Spring's annotations are imported by name in the samples (compilation units).
    "dlpack4j-spring-boot-starter": ("io.github.dlpack4j.spring",),
    # DJL's ai.djl.ndarray.types.DataType clashes with ours: samples import DJL's types by name.
    "dlpack4j-djl": ("io.github.dlpack4j.djl",),
    # Spark's packages clash with ours (org.apache.spark.sql.types.DataType): samples import them by name.
    "dlpack4j-spark": ("io.github.dlpack4j.spark",),
}
JDK_IMPORTS = ("java.util", "java.nio", "java.lang.foreign")

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
TYPE_DECLARATION = re.compile(
    r"^(?:(?:public|final|abstract|sealed|non-sealed|static|strictfp)\s+)*(class|interface|enum|record)\s+(\w+)",
    re.MULTILINE,
)
UNIT_START = re.compile(r"^(?:package|import)\s", re.MULTILINE)
PACKAGE = re.compile(r"^package\s+([\w.]+)\s*;", re.MULTILINE)
JAVAC_DIAGNOSTIC = re.compile(r"^(.*\.java):(\d+): (error|warning): (.*)$")


@dataclass
class Block:
    """One fenced block (or Javadoc snippet) of a document."""

    path: Path
    line: int  # 1-based line of the block's first line of code
    lang: str
    code: str
    run: bool = False
    expected: str | None = None
    expected_line: int = 0

    def where(self) -> str:
        """``file:line`` of the block, relative to the repository."""
        try:
            name = self.path.relative_to(ROOT)
        except ValueError:
            name = self.path
        return f"{name}:{self.line}"


@dataclass
class Report:
    """The failures found, each starting with the file and line it is about."""

    failures: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        """Records one failure."""
        self.failures.append(message)


def markdown_blocks(path: Path, report: Report) -> list[Block]:
    """The fenced blocks of a Markdown file, with run markers and expected outputs attached."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    previous = ""
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        indent, fence, lang = len(match.group(1)), match.group(2), match.group(3).lower()
        start = i + 1
        i += 1
        body = []
        while i < len(lines) and not (lines[i].strip().startswith(fence) and lines[i].strip().strip(fence[0]) == ""):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i].lstrip())
            i += 1
        if i == len(lines):
            report.fail(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{start}: unclosed code fence")
        blocks.append(Block(path, start + 1, lang, "\n".join(body) + "\n", run=previous == RUN_MARKER))
        previous = ""
        i += 1
    for index, block in enumerate(blocks):
        if not block.run:
            continue
        following = next((b for b in blocks[index + 1 :] if b.lang in ("text", "java")), None)
        if following is None or following.lang != "text":
            report.fail(f"{block.where()}: a runnable sample needs a ```text block after it with what it prints")
            block.run = False
            continue
        block.expected, block.expected_line = following.code, following.line
    return blocks


def javadoc_snippets(path: Path) -> list[Block]:
    """The inline ``{@snippet :`` bodies of a Java source file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if "{@snippet :" not in lines[i]:
            i += 1
            continue
        depth = 1
        start = i + 1
        body = []
        i += 1
        while i < len(lines):
            text = re.sub(r"^\s*\*? ?", "", lines[i], count=1)
            depth += text.count("{") - text.count("}")
            if depth <= 0:
                break
            body.append(text)
            i += 1
        blocks.append(Block(path, start + 1, "java", "\n".join(body) + "\n"))
        i += 1
    return blocks


def reactor_modules() -> list[str]:
    """The modules the root POM lists."""
    pom = ET.parse(ROOT / "pom.xml").getroot()
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    return [m.text.strip() for m in pom.findall("m:modules/m:module", ns) if m.text]


def imports_for(modules: list[str]) -> list[str]:
    """The wildcard imports a statement block gets."""
    packages = list(JDK_IMPORTS)
    for module in modules:
        packages.extend(MODULE_IMPORTS.get(module, ()))
    return [f"import {p}.*;" for p in packages]


@dataclass
class Generated:
    """A source file made from a block: where javac's line numbers point back to."""

    block: Block
    offset: int  # javac line - offset = line within the block
    runner_call: str | None  # the Java statement that runs it, for runnable blocks


def generate(blocks: list[Block], modules: list[str], src: Path) -> dict[Path, Generated]:
    """Writes one source file per Java block under ``src``."""
    header = " ".join(imports_for(modules))
    made: dict[Path, Generated] = {}
    for number, block in enumerate(blocks):
        declaration = TYPE_DECLARATION.search(block.code)
        if declaration or UNIT_START.search(block.code):
            package = PACKAGE.search(block.code)
            code = block.code
            if package is None:
                # On the block's first line, so that line numbers stay the block's own.
                code = f"package doctest.b{number}; {code}"
                package_name = f"doctest.b{number}"
            else:
                package_name = package.group(1)
            names = [m.group(2) for m in TYPE_DECLARATION.finditer(block.code)]
            public = re.search(r"^public\s+(?:(?:final|abstract|sealed|non-sealed)\s+)*\w+\s+(\w+)", block.code, re.M)
            name = public.group(1) if public else (names[0] if names else f"Unit{number}")
            file = src / f"b{number}" / package_name.replace(".", "/") / f"{name}.java"
            call = f'Runner.main("{package_name}.{name}");'
            offset = 0
        else:
            name = f"Sample{number}"
            code = (
                f"package doctest; {header} final class {name} {{ static void run() throws Exception {{\n"
                f"{block.code}}}}}\n"
            )
            file = src / "doctest" / f"{name}.java"
            call = f"{name}.run();"
            offset = 1
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(code, encoding="utf-8")
        made[file.resolve()] = Generated(block, offset, call if block.run else None)
    return made


RUNNER = """package doctest;

/**
 * Runs the runnable samples named on the command line, each after a marker line, and 100 ms after
 * the last: what an earlier sample left to another thread settles first (a PyObject closed outside
 * a GIL scope is let go by the release flusher, within 20 ms of its next wake; serving.md's request
 * loop frees its buffer that way), so that a sample's own count of native memory starts from a
 * settled state.
 */
public final class Runner {
    public static void main(String[] args) throws InterruptedException {
        for (String id : args) {
            Thread.sleep(100);
            System.out.println("@@doctest " + id);
            System.out.flush();
            try {
                switch (id) {
%s
                    default -> throw new IllegalArgumentException(id);
                }
            } catch (Throwable t) {
                System.out.println("@@doctest-failed " + id);
                t.printStackTrace(System.out);
            }
            System.out.flush();
        }
        System.out.println("@@doctest end");
        System.out.flush();
        System.exit(0);
    }

    static void main(String className) throws Throwable {
        try {
            Class.forName(className).getMethod("main", String[].class).invoke(null, (Object) new String[0]);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
"""


def javac(jdk: Path, classpath: str, sources: list[Path], out: Path) -> str:
    """Compiles every source at once; returns javac's diagnostics ('' when it succeeded)."""
    out.mkdir(parents=True, exist_ok=True)
    argfile = out.parent / "sources.txt"
    argfile.write_text("\n".join(str(s) for s in sources), encoding="utf-8")
    result = subprocess.run(
        [str(jdk / "bin/javac"), "-d", str(out), "-cp", classpath, "-proc:none", "-encoding", "UTF-8",
         "-nowarn", "-Xlint:none", "-Xmaxerrs", "10000", "-implicit:none", f"@{argfile}"],
        capture_output=True, text=True, check=False,
    )
    return "" if result.returncode == 0 else result.stdout + result.stderr


def report_compile_errors(diagnostics: str, made: dict[Path, Generated], report: Report) -> None:
    """Turns javac's errors into failures that name the document's file and line."""
    errors: list[list[str]] = []
    in_error = False
    for line in diagnostics.splitlines():
        match = JAVAC_DIAGNOSTIC.match(line)
        if match:
            in_error = match.group(3) == "error"
            if not in_error:
                continue
            generated = made.get(Path(match.group(1)).resolve())
            if generated is None:
                where = f"{match.group(1)}:{match.group(2)}"
            else:
                block = generated.block
                within = max(int(match.group(2)) - generated.offset, 1)
                where = f"{block.where().rsplit(':', 1)[0]}:{block.line + within - 1}"
            errors.append([f"{where}: does not compile: {match.group(4)}"])
        elif in_error and line.strip() and not re.match(r"^\d+ (errors?|warnings?)$", line):
            errors[-1].append("    " + line)
    for error in errors:
        report.fail("\n".join(error))
    if not errors:
        report.fail(f"javac failed:\n{diagnostics}")


def expected_matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is what the text says, ``[...]`` matching anything within a line."""

    def lines(text: str) -> list[str]:
        result = [line.rstrip() for line in text.splitlines()]
        while result and not result[-1]:
            result.pop()
        return result

    want, got = lines(expected), lines(actual)
    if len(want) != len(got):
        return False
    for w, g in zip(want, got, strict=True):
        pattern = ".*".join(re.escape(part) for part in w.split("[...]"))
        if not re.fullmatch(pattern, g):
            return False
    return True


def write_runner(made: dict[Path, Generated], src: Path) -> tuple[Path, dict[str, Generated]]:
    """The class that runs the runnable samples in one JVM, and the samples by the id it knows them by."""
    runnable = {str(i): g for i, g in enumerate(made.values()) if g.runner_call}
    cases = "\n".join(f'                    case "{i}" -> {g.runner_call}' for i, g in runnable.items())
    runner = src / "runner" / "doctest" / "Runner.java"
    runner.parent.mkdir(parents=True, exist_ok=True)
    runner.write_text(RUNNER % cases, encoding="utf-8")
    return runner, runnable


def run_samples(jdk: Path, classpath: str, runnable: dict[str, Generated], out: Path, report: Report) -> None:
    """Runs every runnable sample in one JVM and compares what each printed with its text."""
    if not runnable:
        return
    env = dict(os.environ)
    env.setdefault("DLPACK4J_PYTHON", str(ROOT / ".venv/bin/python"))
    env["PYTHONUNBUFFERED"] = "1"
    command = [str(jdk / "bin/java"), "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
               "-cp", f"{out}{os.pathsep}{classpath}", "doctest.Runner", *runnable]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, cwd=ROOT, env=env)
        stdout, stderr = result.stdout, result.stderr
    except subprocess.TimeoutExpired as e:
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = "timed out after 600 s"
    outputs: dict[str, list[str]] = {}
    failed: set[str] = set()
    current: str | None = None
    for line in stdout.splitlines():
        if line.startswith("@@doctest-failed "):
            failed.add(line.split()[1])
        elif line.startswith("@@doctest "):
            current = line.split()[1]
            outputs[current] = []
        elif current is not None:
            outputs[current].append(line)
    for i, generated in runnable.items():
        block = generated.block
        printed = "\n".join(outputs.get(i, []))
        if i not in outputs:
            report.fail(f"{block.where()}: did not run (the JVM ended before it):\n{stderr[-3000:]}")
        elif i in failed:
            report.fail(f"{block.where()}: threw:\n{printed}")
        elif not expected_matches(block.expected or "", printed):
            name = block.where().rsplit(":", 1)[0]
            report.fail(
                f"{block.where()}: printed something else than the text at {name}:{block.expected_line} says\n"
                f"--- expected\n{block.expected}--- printed\n{printed}\n"
            )


def check_java(blocks: list[Block], classpath: str, work: Path, report: Report) -> None:
    """Compiles every Java block (and the runner) in one javac call, then runs the runnable ones."""
    jdk = Path(os.environ.get("JAVA_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"))
    shutil.rmtree(work, ignore_errors=True)
    src, out = work / "src", work / "classes"
    made = generate(blocks, reactor_modules(), src)
    runner, runnable = write_runner(made, src)
    diagnostics = javac(jdk, classpath, [*made, runner], out)
    if diagnostics:
        report_compile_errors(diagnostics, made, report)
        return
    run_samples(jdk, classpath, runnable, out, report)


def check_python(blocks: list[Block], python: Path, report: Report) -> None:
    """Runs every Python block as a script of its own."""
    for block in blocks:
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "sample.py"
            script.write_text(block.code, encoding="utf-8")
            try:
                result = subprocess.run([str(python), str(script)], capture_output=True, text=True, timeout=300,
                                        check=False, cwd=tmp)
            except subprocess.TimeoutExpired:
                report.fail(f"{block.where()}: did not finish within 300 s")
                continue
            if result.returncode != 0:
                report.fail(f"{block.where()}: exited with {result.returncode}:\n{result.stderr[-3000:]}")


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if in_fence or not heading:
            continue
        text = re.sub(r"`|\*|_(?=\W)|(?<=\W)_|\[|\]\([^)]*\)", "", heading.group(1)).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        n = counts.get(slug, 0)
        counts[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    for match in re.finditer(r'<a (?:name|id)="([^"]+)"', path.read_text(encoding="utf-8")):
        found.add(match.group(1))
    return found


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def check_links(files: list[Path], report: Report) -> None:
    """Every relative link, and every link to this repository's files, must resolve."""
    for path in files:
        in_fence = False
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FENCE.match(line):
                in_fence = not in_fence
            if in_fence:
                continue
            for match in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                target = match.group(1) or match.group(2)
                where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{number}"
                problem = link_problem(path, target)
                if problem:
                    report.fail(f"{where}: link {target}: {problem}")


def link_problem(source: Path, target: str) -> str | None:
    """Why ``target`` (a link in ``source``) does not resolve, or None."""
    for prefix in (f"{REPOSITORY_URL}/blob/main/", f"{REPOSITORY_URL}/tree/main/"):
        if target.startswith(prefix):
            local, _, anchor = target[len(prefix) :].partition("#")
            return resolve(ROOT / local, anchor)
    if re.match(r"^[a-z]+:", target):
        return None
    local, _, anchor = target.partition("#")
    return resolve(source if not local else (source.parent / local), anchor)


def resolve(file: Path, anchor: str) -> str | None:
    """Whether ``file`` exists and has ``anchor`` (when given)."""
    if not file.exists():
        return f"{file.relative_to(ROOT) if file.is_relative_to(ROOT) else file} does not exist"
    if anchor and file.suffix == ".md" and anchor not in anchors(file):
        return f"no heading with the anchor #{anchor} in {file.name}"
    return None


def documents() -> list[Path]:
    """README.md and the guides."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def python_documents() -> list[Path]:
    """The Python package's docs, and README.md's tour."""
    return [ROOT / "README.md", ROOT / "python/README.md", *sorted((ROOT / "docs").glob("python*.md"))]


def read_classpath(modules: list[str]) -> str:
    """Each library module's classes and the dependencies Maven wrote for it (scripts/doctest)."""
    entries: list[str] = []
    for module in modules:
        if module not in MODULE_IMPORTS:
            continue
        entries.append(str(ROOT / module / "target/classes"))
        listing = ROOT / module / "target/doctest.classpath"
        if not listing.exists():
            raise SystemExit(f"dlpack4j: {listing} is missing: run scripts/doctest, which writes it")
        for entry in listing.read_text(encoding="utf-8").strip().split(os.pathsep):
            if entry and "/io/github/dlpack4j/" not in entry and entry not in entries:
                entries.append(entry)
    return os.pathsep.join(entries)


def check(markdown: list[Path], java_sources: list[Path], python_docs: list[Path], classpath: str,
          python: Path | None, work: Path) -> Report:
    """Checks the given documents; the report lists every failure."""
    report = Report()
    java: list[Block] = []
    python_blocks: list[Block] = []
    for path in markdown:
        java += [b for b in markdown_blocks(path, report) if b.lang == "java"]
    for path in java_sources:
        java += javadoc_snippets(path)
    for path in python_docs:
        python_blocks += [b for b in markdown_blocks(path, report) if b.lang == "python"]
    check_java(java, classpath, work, report)
    check_links(markdown + [p for p in python_docs if p not in markdown], report)
    if python is not None:
        check_python(python_blocks, python, report)
    print(f"doctest: {len(java)} Java samples ({sum(b.run for b in java)} run), "
          f"{len(python_blocks) if python else 0} Python samples, links in {len(set(markdown + python_docs))} files")
    return report


def main() -> int:
    """Checks README.md, docs/ and the Javadoc snippets of the main types."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", type=Path, default=ROOT / ".venv-jpype/bin/python",
                        help="the Python (with the dlpack4j wheel installed) that runs the Python samples")
    args = parser.parse_args()
    modules = reactor_modules()
    sources = [ROOT / s for s in SNIPPET_SOURCES if (ROOT / s).exists()]
    report = check(documents(), sources, python_documents(), read_classpath(modules), args.python,
                   ROOT / "target/doctest")
    for failure in report.failures:
        print(failure, file=sys.stderr)
    if report.failures:
        print(f"doctest: {len(report.failures)} failed", file=sys.stderr)
        return 1
    print("doctest: every sample and link passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
