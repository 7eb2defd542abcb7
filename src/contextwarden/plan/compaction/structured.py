"""The structured summarizer: a summary built from the derived task state, without a model.

It is the embedded default, the fallback for every rejected model summary, and the writer of every
fact section when a small model under constrained decoding writes only the judgment sections
(``written`` in :func:`history_summary`), so it must always work: offline, deterministic (the same
input gives the same bytes), bounded (every section has a line cap and every line a character cap)
and complete with respect to what verification checks (goal, constraints, modified files,
unresolved errors, failing tests, a next step).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ...tokens import TokenCounter
from ...window.state import MAX_CONSTRAINTS, TaskState
from ._base import SummaryInput, SummaryOptions, SummaryResult
from .sections import HISTORY, TURN, section
from .serialize import Entry, PendingCalls, call_label
from .truth import (
    PINNED_CONSTRAINTS,
    PINNED_GOAL,
    Step,
    clean_text,
    current_errors,
    current_failing,
    current_tests,
    failure_lines,
    is_banner,
    last_step,
    refer_to_anchors,
    repeats,
)

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


def _actions(entries: Sequence[Entry]) -> tuple[list[str], list[str]]:
    """(done, failed) actions: each tool call labelled, paired with its result by call id.

    A failure quotes its failure lines; a failure that a later run of the same call fixed says so.
    A call that never got a result (a framework refused a reply with several actions) is not an
    action; a result whose call is not among the entries is labelled by its tool's name.
    """
    done: list[str] = []
    failed: list[tuple[str, str]] = []
    pending = PendingCalls()
    for e in entries:
        if e.label == "tool call":
            pending.add(e, call_label(e))
        elif e.label == "tool result":
            label = clean_text(pending.take(e) or e.name)
            if e.error:
                # a placeholder is no failure message: quote only an output the window still shows
                why = (" | ".join(failure_lines(e.text)) or "(no output)") if e.shown else "(output no longer shown)"
                failed.append((label, f"`{label}` failed at #{e.seq}: {why}"))
            else:
                done.append(f"[x] `{label}` (#{e.seq})")
                failed = [
                    (lb, f"{text} (later passed)" if lb == label and "later passed" not in text else text)
                    for lb, text in failed
                ]
    return done, [text for _, text in failed]


def _carried_failures(previous: str) -> list[str]:
    """Failed attempts of an earlier summary, without banner-only quotes or escapes."""
    out = []
    for line in _section(previous, section("failed_attempts").title):
        text = clean_text(line.removeprefix("- ").strip())
        head, sep, quote = text.partition(": ")
        if sep and is_banner(quote.split(" | ")[0]):
            text = head
        if text and text != "(none)":
            out.append(text)
    return out


def _assistant_sentences(entries: Sequence[Entry]) -> list[str]:
    out: list[str] = []
    for e in entries:
        if e.label == "assistant":
            out += [s.strip() for s in _SENTENCES.split(clean_text(e.text)) if s.strip()]
    return out


def _in_progress(step: Step | None) -> str:
    if step is None:
        return ""
    if not step.finished:
        return clean_text(step.text)
    calls = ", ".join(f"`{c}`" for c in step.calls) or "its reply"
    outcome = "with a failure" if step.failed else "successfully"
    return f"(nothing: the last step, {calls}, finished {outcome} at #{step.ended_seq or step.seq})"


def _intent(state: TaskState, pinned: bool) -> str:
    """The latest request, unless it is the goal (whole or cut), or steering or a constraint the window pins."""
    intent = state.latest_user_intent
    if repeats(intent, state.goal, min_chars=1):
        return ""
    if pinned and any(repeats(intent, fact, min_chars=1) for fact in (state.latest_steering, *state.constraints)):
        return ""
    return clean_text(state.latest_user_intent)


def _next_steps(state: TaskState, step: Step | None, shape: _Shape, *, pinned: bool) -> list[str]:
    steps: list[str] = []
    failing = current_failing(state)
    errors = current_errors(state)
    if failing:
        steps.append("Make the failing tests pass: " + ", ".join(failing[:6]))
    if errors:
        steps.append("Resolve the open error: " + errors[-1][0])
    if step is not None and not step.finished:
        steps.append("Continue from the last step: " + clean_text(step.text))
    intent = _intent(state, pinned)
    if intent:
        steps.append("Serve the latest request: " + intent)
    if not steps:
        where = "the task pinned above" if pinned else "the goal above"
        steps.append(f"Continue with {where}, starting from the most recent messages.")
    return [f"{n}. {shape.line(s)}" for n, s in enumerate(steps[:4], 1)]


def _tests(state: TaskState) -> list[str]:
    out = []
    for t in current_tests(state):
        verdict = "passed" if t.passed else "FAILED"
        names = f" (failing: {', '.join(t.failing[:MAX_FILES])})" if t.failing else ""
        out.append(f"`{t.target}` {verdict}{names} at #{t.seq}")
    return out


def history_summary(
    data: SummaryInput, shape: _Shape = _Shape(), *, written: Mapping[str, Sequence[str]] | None = None
) -> str:
    """The history summary for ``data``, every section filled, true as of its last entry.

    ``written`` maps section keys to bullets a model wrote for them (constrained decoding): those
    sections take the model's bullets (bounded like the others) instead of the derived ones.
    """
    s = data.state
    pinned = data.anchors_pinned
    done_before = [
        clean_text(ln.removeprefix("- ").strip()) for ln in _section(data.previous_summary, section("done").title)
    ]
    done, failed = _actions(data.entries)
    step = last_step(data.entries)
    changed = [f"[x] Changed `{f}`" for f in s.files_modified]
    sentences = _assistant_sentences(data.entries)
    decisions = [x for x in sentences if _DECISION.search(x)]
    questions = [x for x in sentences if x.endswith(("?", "？"))]
    errors = [e for e, _ in current_errors(s)]
    blocked = [*(f"Failing test: {t}" for t in current_failing(s)), *errors]
    context = [*(f"Error: {e}" for e in errors), *(f"Read: `{f}`" for f in s.files_read)]
    goal = PINNED_GOAL if pinned and s.goal else shape.line(s.goal, min(MAX_GOAL_CHARS, shape.chars * 6))
    constraints = [PINNED_CONSTRAINTS.format(n=len(s.constraints))] if pinned and s.constraints else s.constraints
    b = shape.bullets
    body: dict[str, list[str]] = {
        "goal": [goal or "(no goal recorded)"],
        "constraints": b(constraints, empty="(none)", limit=MAX_CONSTRAINTS),
        "progress": [],
        "done": b([*changed, *done_before, *done], empty="(nothing finished yet)", newest=True),
        "in_progress": b([_in_progress(step)], empty="(none recorded)"),
        "blocked": b(blocked, empty="(nothing known)", limit=MAX_FILES),
        "decisions": b(decisions, empty="(none recorded)", newest=True),
        "next_steps": _next_steps(s, step, shape, pinned=pinned),
        "critical_context": b(context, empty="(none)"),
        "working_set": b([f"`{f}`" for f in s.working_set], empty="(empty)"),
        "changes": b([f"`{f}`" for f in s.files_modified], empty="(no files changed)", limit=MAX_FILES),
        "test_status": b(_tests(s), empty="(no tests run)"),
        "failed_attempts": b([*_carried_failures(data.previous_summary), *failed], empty="(none)", newest=True),
        "open_questions": b(questions, empty="(none recorded)", newest=True),
        "latest_user_intent": [
            shape.line(_intent(s, pinned), shape.chars * 3)
            or ("(see the pinned block above)" if pinned else "(the goal above)" if s.goal else "(none recorded)")
        ],
    }
    for key, items in (written or {}).items():
        if key == "next_steps":
            body[key] = [f"{n}. {shape.line(i)}" for n, i in enumerate(list(dict.fromkeys(items))[:4], 1)]
        else:
            body[key] = b(items, empty="(none)")
    lines = [line for sec in HISTORY for line in (sec.heading, *body[sec.key])]
    if data.focus:
        lines[0:0] = [f"_Focus requested: {shape.line(data.focus)}_", ""]
    text = "\n".join(lines)
    return refer_to_anchors(text, s)[0] if pinned else text


def turn_prefix_summary(data: SummaryInput, shape: _Shape = _Shape()) -> str:
    """The turn-prefix summary: the turn's request, its steps so far, the paths they touched."""
    request = clean_text(next((e.text for e in data.entries if e.label in ("user", "steering")), ""))
    done, failed = _actions(data.entries)
    touched = [clean_text(call_label(e)) for e in data.entries if e.label == "tool call"]
    body = {
        "turn_request": [
            shape.line(request or data.state.latest_user_intent, shape.chars * 3) or "(started before this window)"
        ],
        "turn_progress": shape.bullets([*done, *failed], empty="(no tool calls yet)", newest=True),
        "turn_context": shape.bullets(touched, empty="(none)", newest=True),
    }
    lines = [line for sec in TURN for line in (sec.heading, *body[sec.key])]
    return "\n".join(lines)


class StructuredSummarizer:
    """A :class:`~contextwarden.plan.compaction.Summarizer` that needs no model (see the module docstring).

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
        return SummaryResult(text=self.write(data), summarizer=self.name)

    def write(self, data: SummaryInput, written: Mapping[str, Sequence[str]] | None = None) -> str:
        """The summary text, shrunk until it fits ``data.max_tokens``; ``written`` as for :func:`history_summary`."""
        text = ""
        for lines, chars in SHAPES:
            shape = _Shape(lines, chars)
            text = (
                turn_prefix_summary(data, shape)
                if data.purpose == "turn_prefix"
                else history_summary(data, shape, written=written)
            )
            if data.max_tokens is None or self._size(text) <= data.max_tokens:
                break
        return text
