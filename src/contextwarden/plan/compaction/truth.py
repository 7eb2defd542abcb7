"""What a summary may claim: the facts of the events it covers, as of the latest event.

A summary goes stale in a few known ways, each seen on real sessions:

- it names as "in progress" a step whose tool calls have all returned since;
- it lists a failing test after a later, wider run passed (``pytest:all`` passing closes an
  earlier ``pytest:tests/test_a.py`` failure);
- it quotes a test runner's banner (``===== test session starts``) as the failure instead of the
  assertion or error line;
- it carries terminal escapes (ANSI colour codes) out of a tool's output;
- it repeats the goal and constraints that the pinned block already holds verbatim.

This module computes the facts once, for both the structured summarizer (which writes from them)
and verification (which checks any summary against them), so the two cannot disagree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...window.outcome import output_body
from ...window.policies._errors import find_error_lines
from ...window.policies.normalize import _ANSI, _CONTROL
from ...window.taskstate import TaskState, TestStatus
from .serialize import Entry, PendingCalls, call_label

MAX_FAILURE_LINES = 2
"""A failed attempt quotes at most this many failure lines."""

_SGR_REMNANT = re.compile(r"\[[0-9]{1,3}(?:;[0-9]{1,3}){0,4}m")
"""A colour code whose escape character was lost on the way (``[1m``, ``[0m``)."""
_BANNER = re.compile(r"^[\s=_*#~+-]*$|^\s*[=_*~+-]{3,}.*[=_*~+-]{3,}\s*$|^\s*[=_*~+-]{5,}")
"""A rule or a framed title line: ``=====``, ``===== test session starts =====``, ``-----``."""
_ERROR_KEY = re.compile(r"^\[[^\]\n]*\] ")
"""The ``[tool target] `` prefix the task state puts before an error line."""
_RUNNER_TALLY = re.compile(r"\b\d+ (?:failed|errors?|passed)\b.*\bin [\d.]+s\b", re.IGNORECASE)


def clean_text(text: str) -> str:
    """``text`` without terminal escapes, their lost-escape remnants and other control characters."""
    if "\x1b" in text or "\x9b" in text:
        text = _ANSI.sub("", text)
    text = _SGR_REMNANT.sub("", text)
    return _CONTROL.sub("", text.replace("\t", " "))


def is_banner(line: str) -> bool:
    """Whether ``line`` is a rule or a framed title, not content."""
    return bool(_BANNER.match(line))


def _unwrapped(output: str) -> str:
    """The text of a tool output that came wrapped in JSON (``{"output": "...", "metadata": ...}``)."""
    if not output.lstrip().startswith("{"):
        return output
    try:
        raw = json.loads(output)
    except json.JSONDecodeError:
        return output
    inner = raw.get("output") if isinstance(raw, dict) else None
    return inner if isinstance(inner, str) else output


def failure_lines(output: str, limit: int = MAX_FAILURE_LINES) -> list[str]:
    """The lines that say why a tool failed: assertion and error lines first, never banners.

    Falls back to the runner's tally (``1 failed, 3 passed in 0.2s``, its frame removed), then to
    the last line with content. An output wrapped in JSON is read inside its ``output`` string.
    """
    text = clean_text(output_body(_unwrapped(output)))
    found = [text[e.start : e.end].strip() for e in find_error_lines(text)]
    lines = [ln for ln in dict.fromkeys(found) if ln and not is_banner(ln)]
    # Assertion detail (pytest's ``E   ...``) says more than the ``FAILED test_x`` lines before it.
    lines.sort(key=lambda ln: 0 if ln.startswith("E ") or "Error" in ln or "assert" in ln.lower() else 1)
    if lines:
        return lines[:limit]
    for raw in reversed(text.splitlines()):
        tally = raw.strip().strip("=_*-~ ").strip()
        if tally and _RUNNER_TALLY.search(tally):
            return [tally]
    rest = [ln.strip() for ln in text.splitlines() if ln.strip() and not is_banner(ln)]
    return rest[-1:]


@dataclass(frozen=True, kw_only=True)
class Step:
    """The last thing the assistant said it would do, and whether it has finished."""

    text: str
    """What the assistant wrote."""
    seq: int
    """Seq of that assistant message."""
    calls: tuple[str, ...] = ()
    """Labels of its tool calls (``bash pytest -q``)."""
    finished: bool = False
    """Every tool call it made has returned (a step with no calls is finished once anything follows)."""
    failed: bool = False
    """One of its calls failed."""
    ended_seq: int = 0
    """Seq of the result that finished it (0 while it runs, or for a step with no calls)."""


def last_step(entries: Sequence[Entry]) -> Step | None:
    """The last assistant message with text in ``entries`` and whether its calls have all returned."""
    index = next((n for n in range(len(entries) - 1, -1, -1) if entries[n].label == "assistant"), None)
    if index is None:
        return None
    said = entries[index]
    calls = [e for e in entries[index:] if e.label == "tool call" and e.seq == said.seq]
    pending = PendingCalls()
    for c in calls:
        pending.add(c, c.name)
    failed, ended = False, 0
    for e in entries[index + 1 :]:
        if e.label == "tool result" and pending.take(e) is not None:
            failed, ended = failed or e.error, e.seq
    later = any(e.seq > said.seq for e in entries[index + 1 :])
    finished = not pending and (bool(calls) or later)
    labels = tuple(call_label(c) for c in calls)
    return Step(
        text=said.text.strip(),
        seq=said.seq,
        calls=labels,
        finished=finished,
        failed=failed,
        ended_seq=ended if finished else 0,
    )


def finished_steps(entries: Sequence[Entry], *, min_chars: int = 12) -> list[str]:
    """Texts of the assistant steps in ``entries`` that have finished (one pass, oldest first).

    A step is an assistant message with text and the tool calls it made; it has finished when every
    call has returned (a step without calls, once anything follows it). The text of the last step,
    when that one is still running, is left out even if an earlier finished step said the same.
    """
    done: list[str] = []
    text, seq, calls, later = "", 0, 0, False
    pending = PendingCalls()

    def close() -> None:
        if text and not pending and (calls or later) and len(text) >= min_chars:
            done.append(text)

    for e in entries:
        if e.label == "assistant":
            close()
            text, seq, calls, pending, later = clean_text(e.text).strip(), e.seq, 0, PendingCalls(), False
            continue
        if e.label == "tool call" and e.seq == seq and text:
            calls += 1
            pending.add(e, e.name)
        elif e.label == "tool result":
            pending.take(e)
        if e.seq > seq:
            later = True
    if text and (pending or not (calls or later)):
        return [t for t in done if t != text]
    close()
    return done


def _covers(wider: str, narrower: str) -> bool:
    """Whether a run of test target ``wider`` includes ``narrower`` (same runner, ``all`` or a path prefix)."""
    runner, _, scope = wider.partition(":")
    other_runner, _, other_scope = narrower.partition(":")
    if runner != other_runner:
        return False
    if scope in ("all", "", "."):
        return True
    return other_scope == scope or other_scope.startswith(scope.rstrip("/") + ("::" if ".py" in scope else "/"))


def current_tests(state: TaskState) -> tuple[TestStatus, ...]:
    """The state's test runs without the failures a later passing run of a wider target closed."""
    return tuple(
        t
        for t in state.tests
        if t.passed or not any(o.passed and o.seq > t.seq and _covers(o.target, t.target) for o in state.tests)
    )


def current_failing(state: TaskState) -> tuple[str, ...]:
    """Failing tests of :func:`current_tests` (the state's ``failing_tests``, superseded ones removed)."""
    out: list[str] = []
    for t in current_tests(state):
        if not t.passed:
            out.extend(t.failing or (t.target,))
    return tuple(out)


_JSON_OUTPUT = re.compile(r'^\{\s*"output"\s*:\s*"((?:[^"\\]|\\.)*)')
"""The start of a JSON-wrapped tool output, possibly cut before its end (the state caps error lines)."""


def error_quote(error: str) -> str:
    """The quoted line of a state error (``[bash pytest:all] E  assert 1 == 2``), "" when it is only a banner.

    An error line that is a JSON-wrapped output (Codex's ``{"output": "..."}``) is quoted by its failure line.
    """
    m = _ERROR_KEY.match(error)
    quote = clean_text(error[m.end() :] if m else error).strip()
    wrapped = _JSON_OUTPUT.match(quote)
    if wrapped:
        try:
            inner = str(json.loads(f'"{wrapped.group(1)}"'))
        except json.JSONDecodeError:
            inner = wrapped.group(1).replace("\\n", "\n")
        quote = (failure_lines(inner, limit=1) or [quote])[0]
    return "" if is_banner(quote) else quote


def current_errors(state: TaskState) -> tuple[tuple[str, str], ...]:
    """(error, result id) of the unresolved errors, without those of test targets a later passing run closed.

    An error whose first error line was a runner's banner is shown as its action and "failed".
    """
    closed = {t.target for t in state.tests if not t.passed} - {t.target for t in current_tests(state)}
    ids = state.unresolved_error_ids
    ids = ids if len(ids) == len(state.unresolved_errors) else ("",) * len(state.unresolved_errors)
    out: list[tuple[str, str]] = []
    for error, event_id in zip(state.unresolved_errors, ids, strict=True):
        if any(f" {target}] " in error for target in closed):
            continue
        m = _ERROR_KEY.match(error)
        key = m.group(0) if m else ""
        out.append((f"{key}{error_quote(error) or 'failed'}", event_id))
    return tuple(out)


PINNED_GOAL = "(the original task, pinned verbatim above)"
"""What a summary says instead of the goal when the window pins it."""
PINNED_CONSTRAINTS = "(the user's {n} constraints are pinned verbatim above)"
"""What a summary says instead of the constraints when the window pins them."""


def _words(text: str) -> re.Pattern[str]:
    """``text`` as a pattern that matches it across any whitespace."""
    return re.compile(r"\s+".join(re.escape(w) for w in text.split()))


MIN_REPEAT_CHARS = 60
"""A line that is the first this many characters of the goal (or more) repeats it, cut or not."""
_LEAD = re.compile(r"^(\s*(?:[-*]|\d+\.)?\s*(?:\[[ x]\]\s*)?(?:[A-Z][\w ]{0,40}:\s+)?)(.*)$")
"""A bullet, its checkbox and a short label (``1. Serve the latest request: ``), then the content."""


def repeats(text: str, fact: str, *, min_chars: int = MIN_REPEAT_CHARS) -> bool:
    """Whether ``text`` is ``fact``, or a cut start of it at least ``min_chars`` long.

    The task state caps the latest request at 2,000 characters and summaries cut lines, so the
    goal often comes back as its own first part rather than whole.
    """
    flat = " ".join(text.split()).rstrip("…").rstrip()
    whole = " ".join(fact.split())
    return bool(flat) and (flat == whole or (len(flat) >= min_chars and whole.startswith(flat)))


def refer_to_anchors(text: str, anchors: TaskState) -> tuple[str, list[str]]:
    """``text`` with repeats of the pinned goal and constraints replaced by a reference.

    A repeat is a verbatim copy anywhere in the text, or a line whose content is the goal's first
    part (see :func:`repeats`). Returns the text and the facts that were repeated (cut to 120
    characters).
    """
    constraints = PINNED_CONSTRAINTS.format(n=len(anchors.constraints))
    repeated: list[str] = []
    for fact, reference in ((anchors.goal, PINNED_GOAL), *((c, constraints) for c in anchors.constraints)):
        if len(fact.split()) < 4:
            continue  # a short phrase may legitimately recur
        pattern = _words(fact)
        if pattern.search(text):
            text = pattern.sub(reference, text)
            repeated.append(fact[:120])
    lines: list[str] = []
    for line in text.splitlines():
        m = _LEAD.match(line)
        if anchors.goal and m and not line.lstrip().startswith("#") and repeats(m.group(2), anchors.goal):
            line = m.group(1) + PINNED_GOAL
            if anchors.goal[:120] not in repeated:
                repeated.append(anchors.goal[:120])
        if not (lines and line == lines[-1] and line.strip("- ") in (PINNED_GOAL, constraints)):
            lines.append(line)
    return "\n".join(lines), repeated
