"""The doc checker's own tests: it fails on broken samples and links, naming the file and line.

Run by scripts/doctest after the real check (which writes the class path these tests compile with).
"""

from __future__ import annotations

from pathlib import Path

import doccheck as checker  # scripts/dev is on sys.path: pytest's rootdir-relative import


def check(doc: Path, work: Path) -> checker.Report:
    return checker.check([doc], [], [], checker.read_classpath(checker.reactor_modules()), None, work / "out")


def write(tmp_path: Path, text: str) -> Path:
    doc = tmp_path / "sample.md"
    doc.write_text(text, encoding="utf-8")
    return doc


RUNNABLE = """# A guide

<!-- doctest: run -->
```java
try (Tensor t = Tensor.of(new float[] {1, 2, 3})) {
    System.out.println(t.getDouble(2) + " at [...]");
}
```

```text
%s
```
"""


def test_a_correct_runnable_sample_passes(tmp_path):
    report = check(write(tmp_path, RUNNABLE % "3.0 at [...]"), tmp_path)
    assert report.failures == []


def test_a_sample_that_does_not_compile_fails_naming_its_file_and_line(tmp_path):
    doc = write(tmp_path, "# Broken\n\n```java\nTensor t = Tensor.of(new float[] {1});\nt.noSuchMethod();\n```\n")
    report = check(doc, tmp_path)
    assert len(report.failures) == 1
    assert report.failures[0].startswith(f"{doc}:5: does not compile: cannot find symbol")


def test_a_runnable_sample_that_prints_something_else_fails_naming_its_file_and_line(tmp_path):
    doc = write(tmp_path, RUNNABLE % "4.0 at [...]")
    report = check(doc, tmp_path)
    assert len(report.failures) == 1
    assert report.failures[0].startswith(f"{doc}:5: printed something else than the text at {doc}:11 says")


def test_a_runnable_sample_that_throws_fails_naming_its_file_and_line(tmp_path):
    doc = write(tmp_path, "<!-- doctest: run -->\n```java\nTensor.of(new float[] {1}).getDouble(7);\n```\n"
                          "```text\n```\n")
    report = check(doc, tmp_path)
    assert len(report.failures) == 1
    assert report.failures[0].startswith(f"{doc}:3: threw:")
    assert "IndexOutOfBoundsException" in report.failures[0]


def test_a_compilation_unit_keeps_its_own_imports_and_its_main_runs(tmp_path):
    unit = ("<!-- doctest: run -->\n```java\nimport io.github.dlpack4j.Tensor;\n\n"
            "public class Hello {\n    public static void main(String[] args) {\n"
            "        System.out.println(Tensor.of(new long[] {4, 2}).numel());\n    }\n}\n```\n```text\n2\n```\n")
    assert check(write(tmp_path, unit), tmp_path).failures == []


def test_a_runnable_sample_without_its_output_is_refused(tmp_path):
    doc = write(tmp_path, "<!-- doctest: run -->\n```java\nSystem.out.println(1);\n```\n")
    report = check(doc, tmp_path)
    assert report.failures == [f"{doc}:3: a runnable sample needs a ```text block after it with what it prints"]


def test_a_broken_link_or_anchor_fails_naming_its_file_and_line(tmp_path):
    doc = write(tmp_path, "# Title\n\n[ok](#title) [gone](missing.md)\n[no anchor](#nowhere)\n")
    report = checker.Report()
    checker.check_links([doc], report)
    assert report.failures == [
        f"{doc}:3: link missing.md: {tmp_path / 'missing.md'} does not exist",
        f"{doc}:4: link #nowhere: no heading with the anchor #nowhere in sample.md",
    ]


def test_every_link_between_readme_and_docs_resolves():
    report = checker.Report()
    checker.check_links(checker.documents() + checker.python_documents(), report)
    assert report.failures == []


def test_every_guide_is_linked_from_the_readme():
    readme = (checker.ROOT / "README.md").read_text(encoding="utf-8")
    guides = sorted(p.name for p in (checker.ROOT / "docs").glob("*.md"))
    assert [g for g in guides if f"(docs/{g}" not in readme] == []


def test_anchors_follow_githubs_rules(tmp_path):
    doc = write(tmp_path, "# The `dlpack4j` command\n## Holding the GIL: `withGil` and `allowThreads`\n"
                          "## FAQ\n## FAQ\n")
    assert checker.anchors(doc) == {
        "the-dlpack4j-command", "holding-the-gil-withgil-and-allowthreads", "faq", "faq-1"}
