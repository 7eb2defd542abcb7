"""Run every experiment (``docs/behaviours.md``, row 42), print their tables and write docs/experiments/.

.venv/bin/python experiments/run_all.py            # full size, writes docs/experiments/*.md
.venv/bin/python experiments/run_all.py --small --out /tmp/exp --only budget stale_context
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from _common import DOCS, Experiment, markdown, print_experiment, run_seeded

EXPERIMENTS: tuple[str, ...] = (
    "budget",
    "priority_pruning",
    "tool_truncation",
    "working_set",
    "compaction",
    "summary_drift",
    "stale_context",
    "tool_exposure",
)
"""The eight experiments, in the specification's order."""


def index(done: Sequence[tuple[Experiment, float]], *, small: bool) -> str:
    """docs/experiments/README.md: what each experiment shows, with its first finding."""
    size = " --small" if small else ""
    lines = [
        "# The experiments",
        "",
        "The eight experiments the specification asks for (`docs/behaviours.md`, row 42), each a script in "
        "`experiments/` that prints its tables and "
        f"writes the page linked below. Regenerate all with `.venv/bin/python experiments/run_all.py{size}`.",
        "",
        "| experiment | what it shows | seconds |",
        "|---|---|---|",
    ]
    for exp, seconds in done:
        lines.append(f"| [{exp.title.split(': ', 1)[-1]}]({exp.name}.md) | {exp.shows} | {seconds:.1f} |")
    lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the experiments named by ``--only`` (default: all), print them, write their pages and the index."""
    parser = argparse.ArgumentParser(description="Run every experiment.")
    parser.add_argument("--small", action="store_true", help="smaller sizes (seconds less)")
    parser.add_argument("--out", type=Path, default=DOCS, help="directory for the pages (default docs/experiments)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--only", nargs="+", choices=EXPERIMENTS, default=list(EXPERIMENTS), help="which ones")
    args = parser.parse_args(argv)
    done: list[tuple[Experiment, float]] = []
    for name in args.only:
        started = time.perf_counter()
        exp: Experiment = run_seeded(importlib.import_module(name).run, small=args.small)
        seconds = time.perf_counter() - started
        print_experiment(exp)
        print()
        done.append((exp, seconds))
        if not args.no_write:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{name}.md").write_text(markdown(exp, seconds=seconds, small=args.small), encoding="utf-8")
    if not args.no_write:
        (args.out / "README.md").write_text(index(done, small=args.small), encoding="utf-8")
        print(f"wrote {len(done)} pages and the index to {args.out}")
    for exp, seconds in done:
        print(f"{exp.name:<18} {seconds:6.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
