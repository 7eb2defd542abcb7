"""Code and docs cite only what the repository holds: no design-document sections, issue numbers or work stages."""

from __future__ import annotations

import re
from pathlib import Path

from _paths import ROOT

BEHAVIOURS = ROOT / "docs" / "behaviours.md"
"""The page that stands in for the design documents; it alone may say where they are kept."""

FORBIDDEN = re.compile(
    r"\bseeds? ?0\d\d\b"  # a design document by number ("seed 002")
    r"|§ ?\d"  # a section of one
    r"|\.\./shared/seeds"  # where they are kept, outside the repository
    r"|\b(?:DESIGN|STYLE)\.md\b"  # documents that are not in the repository
    r"|\bissues? \d+"  # the tracker's numbers
    r"|\bstop \d+\b",  # work stages
    re.IGNORECASE,
)


def _texts() -> list[Path]:
    """Source, docs, tests, benchmarks, experiments and examples; bundled data keeps its provenance lines."""
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    for folder in ("src", "tests", "benchmarks", "experiments", "examples"):
        files += (ROOT / folder).rglob("*.py")
    data = ROOT / "src" / "contextwarden" / "data"
    return sorted(p for p in files if data not in p.parents and p != Path(__file__).resolve())


def test_no_text_cites_a_document_or_issue_the_repository_does_not_hold() -> None:
    found = []
    for path in _texts():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in FORBIDDEN.finditer(line):
                if path == BEHAVIOURS and match.group().startswith("../shared/seeds"):
                    continue
                found.append(f"{path.relative_to(ROOT)}:{number}: {match.group()!r}")
    assert not found, "cite docs/behaviours.md (its row numbers) or say it in domain words:\n" + "\n".join(found)


def test_behaviours_says_the_design_documents_are_outside_the_repository() -> None:
    intro = " ".join(BEHAVIOURS.read_text(encoding="utf-8").split("\n## ", 1)[0].split())
    assert "not part of this repository" in intro and "`../shared/seeds/`" in intro


CITED_TEST = re.compile(r"`((?:tests/[\w/]+/)?test_\w+\.py)?::(test_\w+)`")
"""A test ``docs/behaviours.md`` cites: ```test_x.py::test_name``` or ```::test_name``` (the file before)."""


def test_every_test_the_behaviours_page_cites_exists() -> None:
    files = {p.name: p for p in (ROOT / "tests").rglob("test_*.py")}
    missing = []
    for number, line in enumerate(BEHAVIOURS.read_text(encoding="utf-8").splitlines(), 1):
        current: Path | None = None
        for match in CITED_TEST.finditer(line):
            if match.group(1):
                current = ROOT / match.group(1) if "/" in match.group(1) else files.get(match.group(1))
            if current is None or not current.exists():
                missing.append(f"line {number}: no file for {match.group()}")
            elif not re.search(rf"^(?:async )?def {match.group(2)}\(", current.read_text(encoding="utf-8"), re.M):
                missing.append(f"line {number}: {current.name} has no {match.group(2)}")
    for path in re.findall(r"`(tests/[\w/]+\.py)`", BEHAVIOURS.read_text(encoding="utf-8")):
        if not (ROOT / path).exists():
            missing.append(f"no file {path}")
    assert not missing, "\n".join(missing)
