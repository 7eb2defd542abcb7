"""Statements of a summary checked against the events they speak of: truth, not shape.

A summary can parse, have every heading and still be wrong. Seen on real sessions: a small model
under a JSON grammar writing the schema's own key names as next steps (``"critical_context"``),
numbers as decisions (``"1.2"``), files that do not exist (``./random.py``); actions labelled with the
command of another call; a test "passed" that never ran. So each statement is checked:

- a **judgment** (a decision, a next step, an open question) must be a sentence about the task: not
  a section name or schema key, not a number, with words (:func:`judgment_problem`);
- a **path** anywhere in a judgment or a critical-context item must occur in the session (read,
  written, run or named by the user or a tool output);
- an **action** (``- [x] `cmd` (#12)``, ``- `cmd` failed at #12``) must name the call whose result is
  event #12, with that outcome: a wrong label is replaced by the call's own, a wrong outcome or an
  event that is no tool result drops the line (:func:`check_action`);
- a **test status** (``- `pytest:all` passed at #66``) must be event #66, a run that ran tests (not
  a missing runner, an empty collection or ``--help``) with that verdict (:func:`check_test_status`).

What fails is repaired from the log or dropped; the caller records which.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ...log.events import Compaction
from ...window.outcome import test_not_run
from ...window.taskstate import TaskState
from .sections import HISTORY, section
from .serialize import Entry, call_label
from .truth import clean_text

MAX_DROPPED_SHARE = 0.5
"""A model answer whose statements fail the log at more than this share is rejected as a whole."""

JUDGMENT_KEYS: frozenset[str] = frozenset({"decisions", "next_steps", "open_questions"})
"""Sections whose items must be sentences."""
CHECKED_KEYS: frozenset[str] = JUDGMENT_KEYS | {"critical_context"}
"""Sections whose items are checked for invented paths too."""

_PATH = re.compile(
    r"(?<![\w/.-])(?:\.{0,2}/)?((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,5}|(?:[\w.-]+/)+[\w.-]+)"
)
"""A file path: ``src/a.py``, ``./random.py``, ``data/features-list.json``, ``pkg/sub``."""
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*$")
_WORD = re.compile(r"[^\W\d_]{2,}|[\u3400-\u9fff]")
_ACTION = re.compile(r"`([^`]+)`(.*?)(?:\(#(\d+)\)| at #(\d+))")
_TEST = re.compile(r"`([^`]+)` (passed|FAILED)\b.*? at #(\d+)")
_FAILURES = re.compile(r"^(?:FAILED|ERROR)\s+\S|\b\d+ (?:failed|errors?)\b", re.MULTILINE)
_RUNS_TESTS = re.compile(r"test|spec|check|tox|nox", re.IGNORECASE)
"""A command that can run tests names one of these (``pytest``, ``runtests.py``, ``bin/test``, ``go test``)."""
_NAMES: frozenset[str] = frozenset(
    n for s in HISTORY for n in (s.key, s.key.replace("_", " "), s.title.lower(), *s.title.lower().split(" & ")) if n
)
"""Section keys and titles in every spelling a model echoes them in."""


def _flat(text: str) -> str:
    return " ".join(clean_text(text).split())


def session_text(entries: Iterable[Entry], state: TaskState) -> str:
    """Everything the session said: what a path or name in a summary must come from."""
    parts = [state.goal, *state.constraints, state.latest_user_intent, *state.files_read, *state.files_modified]
    parts += [e.text for e in entries]
    return "\n".join(parts)


def invented_paths(item: str, session: str) -> list[str]:
    """Paths ``item`` names that the session never mentions (by full path or by file name)."""
    out = []
    for m in _PATH.finditer(item):
        path = m.group(1).strip("./")
        if not path or path.replace(".", "").isdigit():
            continue
        name = path.rsplit("/", 1)[-1]
        if path not in session and name not in session:
            out.append(m.group(0))
    return out


def judgment_problem(key: str, item: str, session: str | None) -> str:
    """Why ``item`` of section ``key`` is no statement about this task ("" when it is one).

    ``session`` is :func:`session_text`; None skips the path check (the events are not at hand).
    """
    flat = _flat(item).strip("`*_-.:;,\"' ")
    bare = flat.lower().strip("#").strip()
    if bare in _NAMES or bare.replace(" ", "_") in _NAMES:
        return "a section name, not a statement"
    if not _WORD.search(flat):
        return "no words"
    if key in JUDGMENT_KEYS and len(_WORD.findall(flat)) < 2:
        return "not a sentence"
    invented = invented_paths(flat, session) if session is not None else []
    if invented:
        return f"names {', '.join(invented[:3])}, which the session never mentions"
    return ""


def check_written(written: Mapping[str, Sequence[str]], session: str) -> tuple[dict[str, list[str]], list[str], int]:
    """The model's items that hold, the ones dropped (with why) and how many were checked."""
    kept: dict[str, list[str]] = {}
    dropped: list[str] = []
    checked = 0
    for key, items in written.items():
        for item in items:
            checked += 1
            why = judgment_problem(key, item, session) if key in CHECKED_KEYS else ""
            if why:
                dropped.append(f"{key}: {item[:80]!r} ({why})")
            else:
                kept.setdefault(key, []).append(item)
    return kept, dropped, checked


def results_by_seq(entries: Sequence[Entry]) -> dict[int, tuple[Entry, str]]:
    """Tool-result seq → (the result, the label of its call); calls and results paired by id."""
    labels: dict[str, str] = {}
    out: dict[int, tuple[Entry, str]] = {}
    for e in entries:
        if e.label == "tool call" and e.call_id:
            labels[e.call_id] = clean_text(call_label(e))
        elif e.label == "tool result" and e.seq:
            out[e.seq] = (e, labels.get(e.call_id, e.name))
    return out


def named_seq(line: str) -> int | None:
    """The event an action or test-status line names (``(#12)``, ``at #12``), if any."""
    m = _ACTION.search(line)
    return int(m.group(3) or m.group(4)) if m else None


def _same_label(said: str, true: str) -> bool:
    head = " ".join(said.rstrip("…").split())
    return bool(head) and " ".join(true.split()).startswith(head)


def check_action(line: str, results: Mapping[int, tuple[Entry, str]], *, failed: bool) -> tuple[str | None, str]:
    """``line`` (an action claiming ``failed`` or done at an event) with its label made true.

    Returns (the line, "") when it holds or names no event, (relabelled line, "relabelled") when only
    the label was wrong, and (None, why) when the event is no tool result or its outcome differs.
    """
    m = _ACTION.search(line)
    if m is None:
        return line, ""
    seq = int(m.group(3) or m.group(4))
    found = results.get(seq)
    if found is None:
        return None, f"#{seq} is not a tool result of this window"
    result, label = found
    if result.error != failed:
        return None, f"#{seq} {'succeeded' if failed else 'failed'}"
    if _same_label(m.group(1), label):
        return line, ""
    return line[: m.start(1)] + label + line[m.end(1) :], "relabelled"


def check_test_status(line: str, results: Mapping[int, tuple[Entry, str]]) -> str:
    """Why a test-status line is wrong ("" when event #N is a run that ran tests, with that verdict)."""
    m = _TEST.search(line)
    if m is None:
        return ""
    verdict, seq = m.group(2), int(m.group(3))
    found = results.get(seq)
    if found is None:
        return f"#{seq} is not a tool result of this window"
    result, label = found
    if not _RUNS_TESTS.search(label):
        return f"#{seq} ran no test command ({label[:60]})"
    not_run = test_not_run(label, result.text, None)
    if not_run:
        return f"no test ran at #{seq} ({not_run})"
    failed = result.error or bool(_FAILURES.search(result.text[-200_000:]))
    if failed == (verdict == "passed"):
        return f"the run at #{seq} {'failed' if failed else 'passed'}"
    return ""


@dataclass(frozen=True)
class Facts:
    """What the statements of one summary are checked against."""

    results: dict[int, tuple[Entry, str]]
    """Tool-result seq → (result, its call's label) (:func:`results_by_seq`)."""
    session: str | None
    """What the session said (None: no events at hand, paths are not checked)."""
    counted: list[int]
    """``counted[0]`` grows by the statements checked."""
    first_seq: int
    """The oldest event the entries hold: a line about an older one was checked when it was written."""


_PLACEHOLDER = re.compile(r"^\(.*\)$|^_.*_$")
_BULLET = re.compile(r"^\s*(?:[-*]|\d+\.)\s+(?:\[[ x]\]\s+)?")
_ACTION_KEYS = ("done", "failed_attempts", "turn_progress")
_JUDGMENT_KEYS = ("decisions", "next_steps", "critical_context", "open_questions")


def check_section(heading: str, lines: list[str], facts: Facts, corrected: dict[str, list[str]]) -> list[str]:
    """The lines of the section titled ``heading`` (lower case) with each statement checked.

    Lines that fail are dropped or relabelled; ``corrected`` maps the check to what it corrected.
    """
    actions = heading.startswith(_titles(*_ACTION_KEYS))
    tests = heading.startswith(_titles("test_status"))
    judged = next((k for k in _JUDGMENT_KEYS if heading.startswith(_titles(k))), "")
    if not (actions or tests or judged):
        return lines
    keep: list[str] = []
    for line in lines:
        body = _BULLET.sub("", line).strip()
        seq = named_seq(body)
        if _HEADING.match(line) or not body or _PLACEHOLDER.match(body) or (seq or 1) < facts.first_seq:
            keep.append(line)
            continue
        if actions and "#" in body:
            facts.counted[0] += 1
            fixed, why = check_action(line, facts.results, failed=" failed at #" in body)
            if fixed is None:
                corrected.setdefault("wrong_outcomes", []).append(f"{body[:120]} ({why})")
                continue
            if why:
                corrected.setdefault("wrong_labels", []).append(body[:120])
            line = fixed
        elif tests:
            facts.counted[0] += 1
            why = check_test_status(body, facts.results)
            if why:
                corrected.setdefault("wrong_test_status", []).append(f"{body[:120]} ({why})")
                continue
        elif judged:
            facts.counted[0] += 1
            why = judgment_problem(judged, body, facts.session)
            if why:
                corrected.setdefault("untrue_statements", []).append(f"{body[:120]} ({why})")
                continue
        keep.append(line)
    return keep


def _titles(*keys: str) -> tuple[str, ...]:
    return tuple(section(k).title.lower() for k in keys)


def compaction_reason(event: Compaction, why: str) -> str:
    """The decision-log reason of a compaction: why it ran, plus any fallback and correction it needed.

    A summary the summarizer could not be trusted with, replaced by the fallback's, and statements
    verification had to drop or relabel are said here, so ``inspect`` shows them.
    """
    parts = [why] if why else []
    fallback = event.details.get("fallback")
    if isinstance(fallback, list) and fallback:
        parts.append(f"the summarizer failed, so the fallback wrote the summary ({'; '.join(map(str, fallback))})")
    missing = event.verification.get("missing")
    if isinstance(missing, dict):
        fixed = {k: len(v) for k, v in missing.items() if k in _STATEMENT_CHECKS and isinstance(v, list)}
        if fixed:
            parts.append("verification corrected " + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in fixed.items()))
    return "; ".join(parts)


_STATEMENT_CHECKS = ("wrong_labels", "wrong_outcomes", "wrong_test_status", "untrue_statements")
