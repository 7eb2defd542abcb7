"""The structured summarizer: a summary built from the derived task state, without a model.

It is the embedded default and the fallback for every rejected model summary, so it must always
work: offline, deterministic (the same input gives the same bytes), bounded (every section has a
line cap and every line a character cap) and complete with respect to what verification checks
(goal, constraints, modified files, unresolved errors, failing tests, a next step).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..state import MAX_CONSTRAINTS, TaskState
from ..tokens import TokenCounter
from ._base import SummaryInput, SummaryOptions, SummaryResult
from .serialize import Entry

MAX_LINE_CHARS = 300
"""Every bullet is cut to this many characters."""
MAX_LINES = 12
"""Every list section keeps at most this many bullets (newest kept where order matters)."""
MAX_FILES = 100
"""Modified files and failing tests are listed up to this many (verification checks every one)."""
MAX_GOAL_CHARS = 2_000
"""The goal is cut to this many characters (it is pinned verbatim elsewhere anyway)."""

_DECISION = re.compile(
    r"\b(?:because|decided|decide to|instead|chose|so that|rather than)\b|决定|因为|改为", re.IGNORECASE
)
_SENTENCES = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_PATH_KEYS = ("path", "file", "file_path", "filename", "target", "command", "cmd", "pattern", "query", "url")


SHAPES: tuple[tuple[int, int], ...] = ((MAX_LINES, MAX_LINE_CHARS), (6, 160), (3, 100), (1, 60))
"""(bullets per list section, characters per line), tried in order until the summary fits its budget."""


@dataclass(frozen=True)
class _Shape:
    lines: int = MAX_LINES
    chars: int = MAX_LINE_CHARS

    def line(self, text: str, limit: int | None = None) -> str:
        limit = limit or self.chars
        flat = " ".join(text.split())
        return flat if len(flat) <= limit else flat[: limit - 1] + "…"

    def bullets(self, items: Iterable[str], *, empty: str, newest: bool = False, limit: int | None = None) -> list[str]:
        unique = list(dict.fromkeys(i for i in items if i.strip()))
        keep = limit or self.lines
        unique = unique[-keep:] if newest else unique[:keep]
        return [f"- {self.line(i)}" for i in unique] or [f"- {empty}"]


def _section(text: str, heading: str) -> list[str]:
    """Lines under ``heading`` in an earlier summary, up to the next heading."""
    lines = text.splitlines()
    out: list[str] = []
    inside = False
    for line in lines:
        if line.lstrip().startswith("#"):
            if inside:
                break
            inside = line.strip().lstrip("#").strip().lower() == heading.lower()
            continue
        if inside and line.strip():
            out.append(line.strip())
    return out


def _call_label(entry: Entry) -> str:
    """``read_file src/a.py`` from a tool-call entry (its most telling argument, when there is one)."""
    text = entry.text
    for key in _PATH_KEYS:
        m = re.search(rf'"{key}"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
        if m:
            return f"{entry.name} {m.group(1)[:160]}"
    return entry.name


def _actions(entries: Sequence[Entry]) -> tuple[list[str], list[str]]:
    """(done, failed) actions: each tool call labelled, paired with its result by order."""
    done: list[str] = []
    failed: list[str] = []
    pending: dict[str, list[str]] = {}
    for e in entries:
        if e.label == "tool call":
            pending.setdefault(e.name, []).append(_call_label(e))
        elif e.label == "tool result":
            queue = pending.get(e.name) or [e.name]
            label = queue.pop(0)
            if e.error:
                first = next((ln.strip() for ln in e.text.splitlines() if ln.strip()), "")
                failed.append(f"`{label}` failed: {first[:200]}")
            else:
                done.append(f"[x] `{label}` (#{e.seq})")
    return done, failed


def _assistant_sentences(entries: Sequence[Entry]) -> list[str]:
    out: list[str] = []
    for e in entries:
        if e.label == "assistant":
            out += [s.strip() for s in _SENTENCES.split(e.text) if s.strip()]
    return out


def _next_steps(state: TaskState, shape: _Shape) -> list[str]:
    steps: list[str] = []
    if state.failing_tests:
        steps.append("Make the failing tests pass: " + ", ".join(state.failing_tests[:6]))
    if state.unresolved_errors:
        steps.append("Resolve the open error: " + state.unresolved_errors[-1])
    if state.last_assistant_text:
        steps.append("Continue from the last step: " + state.last_assistant_text)
    if state.latest_user_intent:
        steps.append("Serve the latest request: " + state.latest_user_intent)
    if not steps:
        steps.append("Continue with the goal above, starting from the most recent messages.")
    return [f"{n}. {shape.line(s)}" for n, s in enumerate(steps[:4], 1)]


def _tests(state: TaskState) -> list[str]:
    out = []
    for t in state.tests:
        verdict = "passed" if t.passed else "FAILED"
        names = f" (failing: {', '.join(t.failing[:MAX_FILES])})" if t.failing else ""
        out.append(f"`{t.target}` {verdict}{names} at #{t.seq}")
    return out


def history_summary(data: SummaryInput, shape: _Shape = _Shape()) -> str:
    """The history summary for ``data``, every section filled."""
    s = data.state
    done_before = [ln.removeprefix("- ").strip() for ln in _section(data.previous_summary, "Done")]
    done, failed = _actions(data.entries)
    changed = [f"[x] Changed `{f}`" for f in s.files_modified]
    sentences = _assistant_sentences(data.entries)
    decisions = [x for x in sentences if _DECISION.search(x)]
    questions = [x for x in sentences if x.endswith(("?", "？"))]
    failed_before = [ln.removeprefix("- ").strip() for ln in _section(data.previous_summary, "Failed Attempts")]
    blocked = [*(f"Failing test: {t}" for t in s.failing_tests), *s.unresolved_errors]
    context = [*(f"Error: {e}" for e in s.unresolved_errors), *(f"Read: `{f}`" for f in s.files_read)]
    goal = shape.line(s.goal, min(MAX_GOAL_CHARS, shape.chars * 6))
    b = shape.bullets
    lines = [
        "## Goal",
        goal or "(no goal recorded)",
        "## Constraints & Preferences",
        *b(s.constraints, empty="(none)", limit=MAX_CONSTRAINTS),
        "## Progress",
        "### Done",
        *b([*changed, *done_before, *done], empty="(nothing finished yet)", newest=True),
        "### In Progress",
        *b([s.last_assistant_text], empty="(none recorded)"),
        "### Blocked",
        *b(blocked, empty="(nothing known)", limit=MAX_FILES),
        "## Key Decisions",
        *b(decisions, empty="(none recorded)", newest=True),
        "## Next Steps",
        *_next_steps(s, shape),
        "## Critical Context",
        *b(context, empty="(none)"),
        "## Working Set",
        *b([f"`{f}`" for f in s.working_set], empty="(empty)"),
        "## Changes",
        *b([f"`{f}`" for f in s.files_modified], empty="(no files changed)", limit=MAX_FILES),
        "## Test Status",
        *b(_tests(s), empty="(no tests run)"),
        "## Failed Attempts",
        *b([*failed_before, *failed], empty="(none)", newest=True),
        "## Open Questions",
        *b(questions, empty="(none recorded)", newest=True),
        "## Latest User Intent",
        shape.line(s.latest_user_intent, shape.chars * 3) or "(none recorded)",
    ]
    if data.focus:
        lines[0:0] = [f"_Focus requested: {shape.line(data.focus)}_", ""]
    return "\n".join(lines)


def turn_prefix_summary(data: SummaryInput, shape: _Shape = _Shape()) -> str:
    """The turn-prefix summary: the turn's request, its steps so far, the paths they touched."""
    request = next((e.text for e in data.entries if e.label in ("user", "steering")), "")
    done, failed = _actions(data.entries)
    touched = [_call_label(e) for e in data.entries if e.label == "tool call"]
    lines = [
        "## Turn Request",
        shape.line(request or data.state.latest_user_intent, shape.chars * 3) or "(started before this window)",
        "## Turn Progress",
        *shape.bullets([*done, *failed], empty="(no tool calls yet)", newest=True),
        "## Turn Context",
        *shape.bullets(touched, empty="(none)", newest=True),
    ]
    return "\n".join(lines)


class StructuredSummarizer:
    """A :class:`~contextwarden.compaction.Summarizer` that needs no model (see the module docstring).

    With ``data.max_tokens`` set, sections shrink (fewer bullets, shorter lines) until the summary
    fits; sizes are measured with ``counter`` (default: a conservative three characters a token).
    """

    name = "structured"

    def __init__(self, *, counter: TokenCounter | None = None) -> None:
        self.counter = counter

    def _size(self, text: str) -> int:
        return self.counter.count(text) if self.counter is not None else len(text) // 3 + 1

    def summarize(self, data: SummaryInput, *, options: SummaryOptions) -> SummaryResult:
        """Build the summary from the task state and the entries; never calls a model."""
        options.check_cancelled("before the structured summary")
        write = turn_prefix_summary if data.purpose == "turn_prefix" else history_summary
        text = ""
        for lines, chars in SHAPES:
            text = write(data, _Shape(lines, chars))
            if data.max_tokens is None or self._size(text) <= data.max_tokens:
                break
        return SummaryResult(text=text, summarizer=self.name)
