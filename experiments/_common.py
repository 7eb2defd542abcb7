"""What the experiments share: a scripted coding-agent session, a recording strategy, tables and output.

Every experiment is a script ``experiments/<name>.py`` with ``run(*, small=False) -> Experiment``; its
``main`` prints the tables and writes them to ``docs/experiments/<name>.md``. ``--small`` runs a
smaller size (the tests use it), ``--out DIR`` writes elsewhere, ``--no-write`` only prints.

The sessions are scripted, not sampled: a deterministic function of their size, so every figure in
``docs/experiments`` can be reproduced exactly. Outputs have realistic shapes (code files, pytest
runs with progress lines and tracebacks, grep hits, build logs); tool observations make up most of
the tokens, as in real coding-agent trajectories.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from contextwarden.context import ModelContext
from contextwarden.log.events import (
    AssistantMessage,
    Event,
    Instruction,
    JSONValue,
    Steering,
    ToolCall,
    ToolResult,
    UserMessage,
)
from contextwarden.replay import Built, RunEnv, Strategy, StrategyRun
from contextwarden.replay.engine import default_counter
from contextwarden.testing import seeded_event_ids
from contextwarden.tokens import TokenCounter
from contextwarden.wire import render_openai_chat

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "experiments"

SYSTEM = "You are a careful coding agent working in a Python repository. Use the tools; keep changes minimal."


# --------------------------------------------------------------------------- realistic outputs


def code_file(path: str, lines: int) -> str:
    """A Python module of about ``lines`` lines: imports, a class, functions with bodies."""
    stem = Path(path).stem
    out = [
        f'"""Module {stem} of the example project."""',
        "",
        "from __future__ import annotations",
        "",
        "import json",
        "import logging",
        "from dataclasses import dataclass",
        "",
        "log = logging.getLogger(__name__)",
        "",
    ]
    n = 0
    while len(out) < lines:
        n += 1
        out += [
            f"def {stem}_step_{n}(values: list[int], *, scale: int = {n}) -> list[int]:",
            f'    """Scale and clip the values for step {n} of {stem}."""',
            "    result = []",
            "    for value in values:",
            f"        scaled = value * scale + {n * 7 % 13}",
            f"        if scaled > {1000 + n}:",
            f'            log.debug("clipping %s in {stem}", scaled)',
            f"            scaled = {1000 + n}",
            "        result.append(scaled)",
            "    return result",
            "",
        ]
    return "\n".join(out[:lines])


def pytest_output(
    *, tests: int, failing: Sequence[str] = (), module: str = "tests/test_core.py", verbose: bool = False
) -> str:
    """A pytest run: a header, progress dots (``-v``: a line per test), a traceback per failure, the summary."""
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0",
        "rootdir: /repo",
        f"collected {tests} items",
        "",
    ]
    per_line = 60
    bad = {tests * (i + 1) // (len(failing) + 1) for i in range(len(failing))}
    if verbose:
        names = iter(failing)
        for k in range(tests):
            verdict = "FAILED" if k in bad else "PASSED"
            name = next(names) if k in bad else f"test_case_{k}"
            lines.append(f"{module}::{name} {verdict} [{(k + 1) * 100 // tests:>3}%]")
    for start in range(0, 0 if verbose else tests, per_line):
        chunk = min(per_line, tests - start)
        dots = "".join("F" if start + k in bad else "." for k in range(chunk))
        lines.append(f"{module} {dots:<60} [{min(100, (start + chunk) * 100 // tests):>3}%]")
    if failing:
        lines += ["", "=================================== FAILURES ==================================="]
        for name in failing:
            lines += [
                f"_________________________________ {name} _________________________________",
                "",
                f"    def {name}():",
                "        got = compute_total([2, 3])",
                ">       assert got == 5",
                "E       assert 23 == 5",
                "",
                f"{module}:42: AssertionError",
            ]
        lines += ["=========================== short test summary info ============================"]
        lines += [f"FAILED {module}::{name} - assert 23 == 5" for name in failing]
        lines.append(
            f"========================= {len(failing)} failed, {tests - len(failing)} passed in 3.21s "
            "========================="
        )
    else:
        lines.append(f"============================== {tests} passed in 3.02s ===============================")
    return "\n".join(lines)


def grep_output(symbol: str, hits: int) -> str:
    """``grep -rn symbol`` over a project: one line per hit."""
    return "\n".join(
        f"src/pkg/module_{i % 40}.py:{10 + (i * 37) % 900}:    total = {symbol}(values, scale={i})" for i in range(hits)
    )


def build_log(lines: int, *, error_at: int) -> str:
    """A long build log with one real error line in the middle."""
    out = []
    for i in range(lines):
        if i == error_at:
            out.append("src/native/ext.c:214:9: error: 'PyFloat_AS_DOUBLE' undeclared (first use in this function)")
        else:
            out.append(f"[{i * 100 // lines:3d}%] Building C object CMakeFiles/ext.dir/src/native/part_{i}.c.o")
    return "\n".join(out)


# --------------------------------------------------------------------------- scripted sessions


class Script:
    """Events of a session as an agent would log them, built one action at a time.

    Tool-call ids are unique across every script of one experiment run (:func:`run_seeded` numbers them from
    1 again), so a session built from several scripts never repeats one.
    """

    _ids = itertools.count(1)

    def __init__(self, *, system: str = SYSTEM) -> None:
        self.events: list[Event] = [Instruction(text=system)] if system else []

    def user(self, text: str) -> None:
        """A user message."""
        self.events.append(UserMessage(text=text))

    def steer(self, text: str) -> None:
        """A steering message."""
        self.events.append(Steering(text=text))

    def say(self, text: str) -> None:
        """An assistant message without tool calls."""
        self.events.append(AssistantMessage(text=text))

    def call(
        self,
        name: str,
        output: str,
        arguments: dict[str, JSONValue],
        *,
        text: str = "",
        exit_code: int | None = None,
        error: bool = False,
    ) -> None:
        """One tool call and its result."""
        cid = f"call_{next(self._ids)}"
        self.events.append(AssistantMessage(text=text, tool_calls=(ToolCall(id=cid, name=name, arguments=arguments),)))
        self.events.append(ToolResult(call_id=cid, tool_name=name, output=output, exit_code=exit_code, is_error=error))

    def read(self, path: str, lines: int = 240, *, body: str | None = None) -> None:
        """``read_file`` of a whole file."""
        self.call("read_file", body if body is not None else code_file(path, lines), {"path": path})

    def edit(self, path: str, old: str = "scaled = value * scale", new: str = "scaled = int(value) * scale") -> None:
        """``edit_file`` replacing one snippet."""
        self.call("edit_file", f"Edited {path}: 1 replacement.", {"path": path, "old_string": old, "new_string": new})

    def grep(self, symbol: str, hits: int = 60) -> None:
        """``grep`` for a symbol."""
        self.call("grep", grep_output(symbol, hits), {"pattern": symbol, "path": "src"})

    def test(self, *, tests: int = 240, failing: Sequence[str] = ()) -> None:
        """``bash pytest`` with its real-looking output and exit code."""
        self.call(
            "bash",
            pytest_output(tests=tests, failing=failing),
            {"command": "python -m pytest -q tests"},
            exit_code=1 if failing else 0,
        )


GOAL = (
    "Fix compute_total in src/pkg/core.py: compute_total([2, 3]) returns 23 instead of 5. "
    "Do not change the public API of src/pkg/core.py. Keep the fix under 20 changed lines."
)
LATE_CONSTRAINTS = (
    "Never edit the files under vendor/.",
    "Always run the full test suite before you say you are done.",
    "Do not add new dependencies.",
)


def coding_session(rounds: int, *, files: int = 12, file_lines: int = 240, tests: int = 240) -> list[Event]:
    """A scripted session: explore, fix, test, with follow-ups; ``rounds`` rounds of about 5 calls each.

    Each round greps, reads two files, edits one, runs the tests (failing until the last third),
    and every fourth round the user adds a constraint or steers.
    """
    s = Script()
    s.user(GOAL)
    for r in range(rounds):
        a, b = f"src/pkg/module_{r % files}.py", f"src/pkg/module_{(r * 5 + 3) % files}.py"
        s.grep("compute_total", hits=40 + 7 * (r % 5))
        s.read(a, file_lines)
        s.read(b, file_lines // 2)
        s.edit(a)
        fixed = r >= rounds * 2 // 3
        s.test(tests=tests, failing=() if fixed else ("test_compute_total",))
        if r % 4 == 3:
            k = r // 4
            if k < len(LATE_CONSTRAINTS):
                s.user(LATE_CONSTRAINTS[k])
            else:
                s.steer(f"Focus on module_{r % files}.py next; it is the likely cause.")
    s.say("compute_total now adds the values; the full test suite passes.")
    return s.events


# --------------------------------------------------------------------------- recording


@dataclass
class Recorder:
    """A strategy wrapper that keeps every request the inner strategy built, for inspection."""

    inner: Strategy
    built: list[Built] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The inner strategy's name."""
        return self.inner.name

    def start(self, env: RunEnv) -> StrategyRun:
        """Begin one transcript, recording its requests."""
        return _RecordingRun(self.inner.start(env), self.built)


class _RecordingRun:
    def __init__(self, run: StrategyRun, sink: list[Built]) -> None:
        self.run = run
        self.sink = sink

    def observe(self, event: Event) -> None:
        self.run.observe(event)

    def build(self) -> Built:
        built = self.run.build()
        self.sink.append(built)
        return built


def request_text(ctx: ModelContext) -> str:
    """Every string the model sees in a request (OpenAI Chat rendering), joined."""
    body = render_openai_chat(ctx)
    parts: list[str] = []
    for m in body.get("messages", ()):
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [str(p.get("text", "")) for p in content if isinstance(p, dict)]
        for call in m.get("tool_calls") or ():
            parts.append(str(call.get("function", {}).get("arguments", "")))
    return "\n".join(parts)


def small_window(window: int, *, base: str = "gpt-4o", max_output: int = 4_096) -> str:
    """Register ``base``'s profile cut to a ``window``-token window; returns its name (``gpt-4o@32k``).

    Scripted sessions outgrow a small window in seconds, so budget, trigger and compaction all act
    (the compactor derives its sizes from the profile, as the builder does).
    """
    from contextwarden.models import get_profile, register_profile

    name = f"{base}@{window // 1000}k"
    register_profile(
        replace(get_profile(base), name=name, aliases=(), context_window=window, max_output_tokens=max_output)
    )
    return name


def counter() -> TokenCounter:
    """The replay's counter: exact o200k when installed."""
    return default_counter()


# --------------------------------------------------------------------------- tables and output


@dataclass(frozen=True, kw_only=True)
class Table:
    """One table of an experiment."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], note: str = "") -> Table:
    """A table with every cell turned to text (ints with thousands separators)."""

    def cell(v: Any) -> str:
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, int):
            return f"{v:,}"
        if isinstance(v, float):
            return f"{v:,.4f}" if abs(v) < 1 else f"{v:,.2f}"
        return str(v)

    return Table(title=title, columns=tuple(columns), rows=tuple(tuple(cell(v) for v in r) for r in rows), note=note)


@dataclass(frozen=True, kw_only=True)
class Experiment:
    """What an experiment reports."""

    name: str
    title: str
    setup: str
    shows: str
    tables: tuple[Table, ...]
    findings: tuple[str, ...] = ()
    extra: str = ""


def _md_table(t: Table) -> str:
    head = "| " + " | ".join(t.columns) + " |"
    rule = "|" + "|".join("---" for _ in t.columns) + "|"
    body = ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in t.rows]
    out = [f"### {t.title}", "", head, rule, *body]
    if t.note:
        out += ["", t.note]
    return "\n".join(out)


def markdown(exp: Experiment, *, seconds: float, small: bool) -> str:
    """The experiment as a Markdown document."""
    size = " --small" if small else ""
    lines = [
        f"# {exp.title}",
        "",
        f"Command: `.venv/bin/python experiments/{exp.name}.py{size}` "
        f"({seconds:.1f} s on {platform.machine()}, 2 cores, no GPU; tokens: {counter().name}).",
        "",
        f"**Setup.** {exp.setup}",
        "",
        f"**What it shows.** {exp.shows}",
        "",
    ]
    for t in exp.tables:
        lines += [_md_table(t), ""]
    if exp.findings:
        lines += ["## Findings", "", *(f"- {f}" for f in exp.findings), ""]
    if exp.extra:
        lines += [exp.extra, ""]
    return "\n".join(lines)


def print_experiment(exp: Experiment) -> None:
    """The tables, for people (Rich)."""
    from rich.console import Console
    from rich.table import Table as RichTable

    console = Console() if sys.stdout.isatty() else Console(width=160)
    console.print(f"[bold]{exp.title}[/bold]")
    console.print(exp.setup, markup=False)
    for t in exp.tables:
        rich = RichTable(title=t.title, title_justify="left")
        for n, c in enumerate(t.columns):
            rich.add_column(c, justify="left" if n == 0 else "right", overflow="fold")
        for row in t.rows:
            rich.add_row(*row)
        console.print(rich)
        if t.note:
            console.print(t.note, markup=False)
    for f in exp.findings:
        console.print(f"- {f}", markup=False)


SEED = 0
"""The seed of every event id an experiment makes: a page regenerates byte for byte (but for its timing)."""


def run_seeded(run: Callable[..., Experiment], *, small: bool) -> Experiment:
    """Run an experiment with seeded event ids and call ids numbered from 1 (both reach the prompts, so the
    token counts): its page is the same whichever experiments ran before it in the process."""
    Script._ids = itertools.count(1)
    with seeded_event_ids(SEED):
        return run(small=small)


def main(run: Callable[..., Experiment], argv: Sequence[str] | None = None) -> int:
    """Parse ``--small``, ``--out``, ``--no-write``; run, print, write the Markdown."""
    parser = argparse.ArgumentParser(description=(run.__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a smaller size (seconds less; used by the tests)")
    parser.add_argument("--out", type=Path, default=DOCS, help="directory for <name>.md (default docs/experiments)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    exp = run_seeded(run, small=args.small)
    seconds = time.perf_counter() - started
    print_experiment(exp)
    if not args.no_write:
        args.out.mkdir(parents=True, exist_ok=True)
        target = args.out / f"{exp.name}.md"
        target.write_text(markdown(exp, seconds=seconds, small=args.small), encoding="utf-8")
        print(f"wrote {target}")
    return 0
