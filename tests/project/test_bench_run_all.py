"""``benchmarks/run_all.py``: it runs every benchmark script, with options they accept, and says what it skips."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

from _paths import ROOT

BENCH_DIR = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH_DIR))  # run_all imports the benchmarks' _progress
_spec = importlib.util.spec_from_file_location("bench_run_all", BENCH_DIR / "run_all.py")
assert _spec is not None and _spec.loader is not None
run_all = sys.modules["bench_run_all"] = importlib.util.module_from_spec(_spec)  # experiments/ has a run_all too
_spec.loader.exec_module(run_all)


def _options(script: str) -> set[str]:
    """The option strings a script's argparse parser declares, read from its source."""
    tree = ast.parse((BENCH_DIR / script).read_text(encoding="utf-8"))
    return {
        arg.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
        for arg in node.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("--")
    }


def test_every_benchmark_script_is_run() -> None:
    scripts = sorted(path.name for path in BENCH_DIR.glob("bench_*.py"))
    assert sorted(bench.script for bench in run_all.BENCHMARKS) == scripts


@pytest.mark.parametrize("bench", run_all.BENCHMARKS, ids=lambda bench: bench.script)
def test_each_option_run_all_passes_is_one_the_script_accepts(bench: run_all.Bench) -> None:
    given = {arg for arg in (*bench.small, *bench.full) if arg.startswith("--")}
    if bench.json_option is not None:
        given.add(bench.json_option)
    assert given - _options(bench.script) == set()


def test_list_prints_commands_and_the_reason_for_each_skip(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for env in run_all.CLI_BINS.values():
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setattr(run_all, "SHARED_BILLS", tmp_path)
    assert run_all.main(["--list", "--only", "bench_clis,bench_bills,bench_proxy_ab"]) == 0
    printed = capsys.readouterr()
    assert "== skip bench_clis.py: no real CLI installed" in printed.out
    assert "bench_proxy_ab.py --generated 1 --json" in printed.out
    assert "sphinx-doc__sphinx-9711.traj.json" in printed.out  # the bundled trajectory, small
    assert run_all.main(["--list", "--full", "--only", "bench_bills,bench_proxy_ab"]) == 0
    printed = capsys.readouterr()
    assert f"== skip bench_bills.py: no trajectories with per-call usage under {tmp_path}" in printed.out
    assert "bench_proxy_ab.py --generated 4 --json" in printed.out
    monkeypatch.setenv("CONTEXTWARDEN_CODEX_BIN", "/usr/bin/codex")
    run_all.main(["--list", "--only", "bench_clis"])
    assert "bench_clis.py --arms direct,manage --clients codex" in capsys.readouterr().out


def test_an_unknown_benchmark_is_a_clear_error() -> None:
    with pytest.raises(SystemExit, match=r"unknown benchmark.*bench_nope.*known: bench_bills"):
        run_all.main(["--only", "bench_nope"])
