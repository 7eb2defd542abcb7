"""Each experiment runs at its small size, produces its tables and writes its page."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from _paths import ROOT

EXPERIMENTS_DIR = ROOT / "experiments"


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(EXPERIMENTS_DIR))

    def _load(name: str) -> ModuleType:
        return importlib.import_module(name)

    return _load


def rows_of(exp: Any, title_start: str) -> dict[str, tuple[str, ...]]:
    table = next(t for t in exp.tables if t.title.startswith(title_start))
    assert table.rows, f"{title_start}: empty table"
    return {row[0]: row for row in table.rows}


def test_every_experiment_has_a_script_and_run_all_knows_it(load: Any) -> None:
    run_all = load("run_all")
    scripts = {p.stem for p in EXPERIMENTS_DIR.glob("*.py") if not p.stem.startswith("_")} - {"run_all"}
    assert set(run_all.EXPERIMENTS) == scripts
    assert len(scripts) == 8


def test_main_prints_the_tables_and_writes_the_page(
    load: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = load("stale_context")
    common = load("_common")
    assert common.main(stale.run, ["--small", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Experiment 7: stale context" in out and "old read presented as current" in out
    page = (tmp_path / "stale_context.md").read_text(encoding="utf-8")
    assert page.startswith("# Experiment 7: stale context")
    assert "`.venv/bin/python experiments/stale_context.py --small`" in page
    assert re.search(r"^\| strategy \| requests \| old read presented as current", page, re.M)
    assert "## Findings" in page


def test_budget(load: Any) -> None:
    exp = load("budget").run(small=True)
    profiles = rows_of(exp, "calculate_budget()")
    gpt4o = profiles["gpt-4o"]
    assert gpt4o[1] == "128,000" and gpt4o[2] == "8,192"
    assert int(gpt4o[6].replace(",", "")) > int(gpt4o[7].replace(",", ""))  # 30 tools leave less room
    replayed = rows_of(exp, "A 8-round session")
    assert int(replayed["raw"][4].replace(",", "")) > 0  # raw passes the budget
    assert replayed["contextwarden"][4] == "0" and replayed["contextwarden"][5] == "0"


def test_priority_pruning(load: Any) -> None:
    exp = load("priority_pruning").run(small=True)
    visible = rows_of(exp, "What is still visible")
    warden = visible["contextwarden (tiers, pinned, evidence)"]
    assert warden[2:] == ("yes",) * 5
    recency = visible["keep the newest messages that fit"]
    assert recency[2] == "no"  # the goal is the first thing a recency rule drops
    tiers = rows_of(exp, "Tokens per tier")
    goal = next(r for k, r in tiers.items() if k.startswith("1 "))
    assert goal[4] == goal[5]  # tier 1 keeps every token


def test_tool_truncation(load: Any) -> None:
    exp = load("tool_truncation").run(small=True)
    table = next(t for t in exp.tables if t.title.startswith("One output per tool"))
    specific = [r for r in table.rows if r[3].startswith("tool-specific")]
    assert len(specific) == 4
    for row in specific:
        kept, total = row[5].split("/")
        assert kept == total, row
        assert int(row[4].replace(",", "")) <= 800
    head = [r for r in table.rows if r[3] == "head only"]
    assert any(r[5].split("/")[0] != r[5].split("/")[1] for r in head)  # head-only loses facts somewhere
    session = rows_of(exp, "A 2-round session")
    assert session["contextwarden"][6] == "100.0%"


def test_working_set(load: Any) -> None:
    mod = load("working_set")
    exp = mod.run(small=True)
    snapshots = rows_of(exp, "The derived task state")
    end = snapshots["end"]
    assert set(end[1].removesuffix(" …").split(", ")[:3]) == set(mod.FOCUS)
    assert end[3] == "–"  # the last test run passed
    final = rows_of(exp, "The final request")
    assert final["raw"][2] == "3/3"
    assert int(final["contextwarden"][3].replace(",", "")) < int(final["raw"][3].replace(",", ""))
    # the current reads of the files being changed stay, though the default keeps only the newest result
    assert final["contextwarden"][2] == "3/3"
    assert final[mod.UNGUARDED][2] == "2/3"


def test_compaction(load: Any) -> None:
    exp = load("compaction").run(small=True)
    sections = rows_of(exp, "The summary's sections")
    assert all(int(r[2]) >= 1 for r in sections.values())
    facts = rows_of(exp, "What the first request after the compaction shows")
    assert all(r[1] == "yes" for r in facts.values()), facts
    sizes = next(t for t in exp.tables if t.title == "Sizes").rows[0]
    assert int(sizes[1].replace(",", "")) < int(sizes[0].replace(",", ""))
    replayed = rows_of(exp, "The 8-round session replayed")
    assert replayed["contextwarden"][4] == "0"  # the default masks first and may not need to compact
    assert replayed["contextwarden:mask=false"][4] == "0" and int(replayed["contextwarden:mask=false"][5]) >= 1
    assert "## The summary" in exp.extra


def test_summary_drift(load: Any) -> None:
    exp = load("summary_drift").run(small=True)
    summary = rows_of(exp, "Constraints known so far that the summary states")
    assert summary["summary-on-summary (lossy)"][5] != "7/7"  # the stand-in drifts
    assert summary["re-ground every time (lossy)"][5] == "7/7"
    assert summary["summary-on-summary (structured)"][5] == "7/7"
    request = rows_of(exp, "Constraints the next request shows")
    assert all(row[1:] == ("3/3", "4/4", "5/5", "6/6", "7/7") for row in request.values())


def test_stale_context(load: Any) -> None:
    exp = load("stale_context").run(small=True)
    after = rows_of(exp, "Requests after the edit")
    assert after["contextwarden"][2] == "0"
    assert after["contextwarden:min-batch=1000000"][2] == "0"
    assert after["raw"][2] == after["raw"][1]  # raw shows the old read as current every time


def test_tool_exposure(load: Any) -> None:
    exp = load("tool_exposure").run(small=True)
    rows = {(r[0], r[1]): r for r in exp.tables[0].rows}
    for model in ("gpt-4o", "claude-sonnet-4-5"):
        thirty, five = rows[(model, "all 30 tools")], rows[(model, "the 5 needed")]
        assert int(thirty[2].replace(",", "")) > 3 * int(five[2].replace(",", ""))
        # caching softens the token cost; with explicit breakpoints a system+tools prefix under the model's
        # minimum cacheable size (5 tools) is not cached at all, so 30 tools can cost about the same
        assert float(thirty[7].rstrip("×")) < float(thirty[8].rstrip("×"))
    assert float(rows[("gpt-4o", "all 30 tools")][7].rstrip("×")) > 1.0


def test_run_all_writes_the_pages_and_the_index(load: Any, tmp_path: Path) -> None:
    run_all = load("run_all")
    assert run_all.main(["--small", "--out", str(tmp_path), "--only", "stale_context", "priority_pruning"]) == 0
    index = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "[stale context](stale_context.md)" in index and "[priority pruning](priority_pruning.md)" in index
    assert (tmp_path / "stale_context.md").is_file() and (tmp_path / "priority_pruning.md").is_file()


def _without_timing(page: str) -> str:
    """A page with the run's own seconds taken out: the only figure that may differ between runs."""
    page = re.sub(r"\(\d+(?:\.\d+)? s on [^)]*\)", "(… s)", page)
    return re.sub(r"\| \d+(?:\.\d+)? \|$", "| … |", page, flags=re.M)


def test_every_committed_page_is_what_a_fresh_run_writes(load: Any, tmp_path: Path) -> None:
    # The documented command, in a fresh interpreter: the pages are written that way, and nothing the
    # other tests ran in this process can reach the figures.
    run_all = load("run_all")
    done = subprocess.run(
        [sys.executable, str(EXPERIMENTS_DIR / "run_all.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2_000:]
    docs = EXPERIMENTS_DIR.parent / "docs" / "experiments"
    for name in [*run_all.EXPERIMENTS, "README"]:
        fresh = (tmp_path / f"{name}.md").read_text(encoding="utf-8")
        committed = (docs / f"{name}.md").read_text(encoding="utf-8")
        assert _without_timing(fresh) == _without_timing(committed), (
            f"docs/experiments/{name}.md differs from a fresh run: regenerate it with experiments/run_all.py"
        )
