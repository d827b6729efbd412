"""The doc checker's own tests: it fails on broken samples and links, naming the file and line.

Run by scripts/doctest after the real check (which writes the class path these tests compile with).
Two documents are checked, one that does not compile and one whose samples run (javac and a JVM
once each); each test reads its part of their reports.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import doccheck as checker  # scripts/dev is on sys.path: pytest's rootdir-relative import

RUNS = """# A guide

<!-- doctest: run -->
```java
try (Tensor t = Tensor.of(new float[] {1, 2, 3})) {
    System.out.println(t.getDouble(2) + " at 0x" + Long.toHexString(t.dataPointer()));
}
```

```text
3.0 at 0x[...]
```

<!-- doctest: run -->
```java
System.out.println(2 + 2);
```

```text
5
```

<!-- doctest: run -->
```java
Tensor.of(new float[] {1}).getDouble(7);
```

```text
```

<!-- doctest: run -->
```java
import io.github.dlpack4j.Tensor;

public class Hello {
    public static void main(String[] args) {
        System.out.println(Tensor.of(new long[] {4, 2}).numel());
    }
}
```

```text
2
```

<!-- doctest: run -->
```java
System.out.println("no text block follows");
```
"""

DOES_NOT_COMPILE = """# Broken

```java
Tensor t = Tensor.of(new float[] {1});
t.noSuchMethod();
```
"""


def check(tmp: Path, text: str) -> tuple[Path, list[str]]:
    doc = tmp / "sample.md"
    doc.write_text(text, encoding="utf-8")
    report = checker.check([doc], [], [], checker.read_classpath(checker.reactor_modules()), None, tmp / "out")
    return doc, report.failures


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return check(tmp_path_factory.mktemp("runs"), RUNS)


def test_a_sample_that_does_not_compile_fails_naming_its_file_and_line(tmp_path):
    doc, failures = check(tmp_path, DOES_NOT_COMPILE)
    assert len(failures) == 1
    assert failures[0].startswith(f"{doc}:5: does not compile: cannot find symbol")


def test_a_runnable_sample_that_prints_something_else_fails_naming_its_file_and_line(runs):
    doc, failures = runs
    assert [f for f in failures if f.startswith(f"{doc}:16:")] == [
        f"{doc}:16: printed something else than the text at {doc}:20 says\n--- expected\n5\n--- printed\n4\n"]


def test_a_runnable_sample_that_throws_fails_naming_its_file_and_line(runs):
    doc, failures = runs
    threw = [f for f in failures if f.startswith(f"{doc}:25:")]
    assert len(threw) == 1
    assert threw[0].startswith(f"{doc}:25: threw:") and "IndexOutOfBoundsException" in threw[0]


def test_a_runnable_sample_without_its_output_is_refused(runs):
    doc, failures = runs
    assert f"{doc}:48: a runnable sample needs a ```text block after it with what it prints" in failures


def test_samples_that_print_what_their_text_says_pass(runs):
    doc, failures = runs
    assert [f for f in failures if f.startswith((f"{doc}:5:", f"{doc}:33:"))] == []
    assert len(failures) == 3


def test_a_broken_link_or_anchor_fails_naming_its_file_and_line(tmp_path):
    doc = tmp_path / "sample.md"
    doc.write_text("# Title\n\n[ok](#title) [gone](missing.md)\n[no anchor](#nowhere)\n", encoding="utf-8")
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
    doc = tmp_path / "sample.md"
    doc.write_text("# The `dlpack4j` command\n## Holding the GIL: `withGil` and `allowThreads`\n## FAQ\n## FAQ\n",
                   encoding="utf-8")
    assert checker.anchors(doc) == {
        "the-dlpack4j-command", "holding-the-gil-withgil-and-allowthreads", "faq", "faq-1"}


def test_a_javadoc_snippet_that_does_not_compile_fails_naming_its_file_and_line(tmp_path):
    source = tmp_path / "Example.java"
    source.write_text("/**\n * Example.\n *\n * {@snippet :\n * Tensor t = Tensor.of(new float[] {1});\n"
                      " * t.noSuchMethod();\n * }\n */\nfinal class Example {}\n", encoding="utf-8")
    report = checker.check([], [source], [], checker.read_classpath(checker.reactor_modules()), None, tmp_path / "out")
    assert len(report.failures) == 1
    assert report.failures[0].startswith(f"{source}:6: does not compile: cannot find symbol")
