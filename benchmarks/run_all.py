"""Run every benchmark in turn (``make bench``), small by default, at the documented sizes with ``--full``.

Each entry of :data:`BENCHMARKS` is one script with two sets of arguments: ``small`` (a quick look that
still runs every part of the script: a few sessions, one round, the smallest size) and ``full`` (the
sizes ``docs/benchmarks.md`` quotes). A script that writes JSON writes it to ``out/bench/<script>.json``.
A script whose inputs this machine lacks is skipped with the reason, and the run says so at the end:

- ``bench_clis.py`` needs the real CLIs (``scripts/clis.sh`` exports ``CONTEXTWARDEN_CLAUDE_BIN``,
  ``CONTEXTWARDEN_CODEX_BIN``, ``CONTEXTWARDEN_GEMINI_BIN``) and runs the ones installed;
- ``bench_bills.py`` replays the bundled mini-swe-agent trajectory (small) or the shared Gemini 3 sessions
  under ``/work/shared/data`` (full, skipped without them).

PostgreSQL figures (``bench_store.py``, ``bench_proxy_load.py``) need ``CONTEXTWARDEN_PG_DSN``
(``export CONTEXTWARDEN_PG_DSN="$(bash scripts/pg.sh start)"``); without it those scripts measure SQLite
only. A local model (``--local-url`` of ``bench_drift.py`` and ``bench_summaries.py``) is never started
from here: run those scripts alone for it.

    python benchmarks/run_all.py [--full] [--only bench_store,bench_wire] [--list]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from _progress import track

HERE = Path(__file__).resolve().parent
SHARED_BILLS = Path("/work/shared/data/mini-swe-agent-gemini3/trajs")
BUNDLED_BILLS = HERE.parent / "src" / "contextwarden" / "data" / "trajectories" / "mini-swe-agent"
CLI_BINS = {
    "claude-code": "CONTEXTWARDEN_CLAUDE_BIN",
    "codex": "CONTEXTWARDEN_CODEX_BIN",
    "gemini-cli": "CONTEXTWARDEN_GEMINI_BIN",
}


def _always(full: bool) -> list[str]:
    return []


@dataclass(frozen=True, kw_only=True)
class Bench:
    """One benchmark script and how to run it small and at its documented sizes."""

    script: str
    small: tuple[str, ...] = ()
    full: tuple[str, ...] = ()
    json_option: str | None = "--json"
    """The option that takes a path to write JSON to (``None``: the script has none)."""
    inputs: Callable[[bool], list[str]] = field(default=_always)
    """Arguments that depend on this machine (``full`` given); raises ``LookupError`` with the reason
    when the script cannot run here."""

    def command(self, full: bool, out: Path) -> list[str]:
        """The command line for this run, or ``LookupError`` saying why it cannot run here."""
        args = [*(self.full if full else self.small), *self.inputs(full)]
        if self.json_option is not None:
            args += [self.json_option, str(out / f"{Path(self.script).stem}.json")]
        return [sys.executable, str(HERE / self.script), *args]


def _installed_clis(full: bool) -> list[str]:
    clients = [client for client, env in CLI_BINS.items() if os.environ.get(env)]
    if not clients:
        raise LookupError("no real CLI installed (run scripts/clis.sh and export what it prints)")
    return ["--clients", ",".join(clients)]


def _bill_files(full: bool) -> list[str]:
    folder, pattern = (SHARED_BILLS, "*.traj.json") if full else (BUNDLED_BILLS, "*.traj.json")
    files = sorted(str(path) for path in folder.glob(pattern))
    if not files:
        raise LookupError(f"no trajectories with per-call usage under {folder}")
    return files


BENCHMARKS: tuple[Bench, ...] = (
    Bench(script="bench_tokens.py", small=("--min-bytes", "100000", "--runs", "1")),
    Bench(script="bench_wire.py", json_option=None),
    Bench(
        script="bench_store.py",
        small=("--sizes", "10000", "--appends", "50", "--repeats", "3", "--rounds", "1"),
    ),
    Bench(script="bench_build.py", small=("--sizes", "1000", "--calls", "5")),
    Bench(
        script="bench_memory.py",
        small=(
            "--sizes",
            "10",
        ),
        json_option=None,
    ),
    Bench(script="bench_replay.py", small=("--sessions", "2")),
    Bench(script="bench_frontier.py", small=("--sessions", "2")),
    Bench(script="bench_bills.py", json_option=None, inputs=_bill_files),
    Bench(script="bench_drift.py", small=("--skip-real",)),
    Bench(script="bench_summaries.py", small=("--sessions", "1")),
    Bench(script="bench_integrations.py", small=("--frameworks", "langchain")),
    Bench(script="bench_proxy_ab.py", small=("--generated", "1"), full=("--generated", "4")),
    Bench(script="bench_proxy_latency.py", small=("--requests", "10")),
    Bench(script="bench_proxy_load.py", small=("--levels", "1,10", "--turns", "3", "--rounds", "1")),
    Bench(script="bench_clis.py", small=("--arms", "direct,manage"), json_option=None, inputs=_installed_clis),
)
"""Every benchmark script of this folder (``generate_sessions.py`` writes inputs; ``_*.py`` are helpers)."""


def _selected(only: str) -> list[Bench]:
    if not only:
        return list(BENCHMARKS)
    wanted = {name.removesuffix(".py") for name in only.split(",") if name}
    known = {Path(bench.script).stem for bench in BENCHMARKS}
    if wanted - known:
        raise SystemExit(
            f"unknown benchmark(s): {', '.join(sorted(wanted - known))}; known: {', '.join(sorted(known))}"
        )
    return [bench for bench in BENCHMARKS if Path(bench.script).stem in wanted]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="the sizes docs/benchmarks.md quotes (slow)")
    parser.add_argument("--only", default="", help="comma-separated script names to run (default: all)")
    parser.add_argument("--list", action="store_true", help="print each command (or why it is skipped) and stop")
    args = parser.parse_args(argv)
    out = HERE.parent / "out" / "bench"
    benches = _selected(args.only)
    failed, skipped = [], []
    if not args.list:
        out.mkdir(parents=True, exist_ok=True)
    for bench in track(benches, "benchmarks") if not args.list else benches:
        try:
            command = bench.command(args.full, out)
        except LookupError as why:
            skipped.append(f"{bench.script} ({why})")
            print(f"== skip {bench.script}: {why}", flush=True)
            continue
        print(f"== {' '.join(command[1:])}", flush=True)
        if not args.list and subprocess.run(command).returncode:
            failed.append(bench.script)
    if skipped:
        print(f"skipped: {'; '.join(skipped)}", file=sys.stderr)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
