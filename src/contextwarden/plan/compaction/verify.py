"""Anchors, post-compaction verification with repair, and the re-grounding schedule.

**Anchors.** The original goal, the user's constraints, the latest steering and project rules are
never left to a summary: the compaction stores a snapshot of the task state at the cut
(:func:`anchor_state`) and the window renders them verbatim from it (``window.pinned_text``).

**Verification.** After a summary is written, :func:`verify_summary` checks the new window against
the derived task state: the goal and every constraint are visible (pinned or in the summary),
every modified file, unresolved error and failing test is named in the summary or the kept tail,
and the summary says what to do next. Whatever is missing is appended, verbatim, to the summary,
and the record says what was repaired.

**Truth.** The same check then corrects what the summary says that is no longer true
(:mod:`~contextwarden.plan.compaction.truth`): terminal escapes are stripped; "In Progress" and "Next
Steps" lines naming a step that has since finished are replaced; lines still calling a test
failing after a later passing run closed it are dropped; failure quotes that are only a runner's
banner are cut; the pinned goal and constraints, repeated verbatim in the summary, are replaced by
a reference to the pinned block. The record names every correction.

**Re-grounding.** Summary-on-summary drifts. :func:`reground_reason` says when to rebuild the
summary from the raw events of the log instead (every K compactions, or after a compaction
whose verification had to repair).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ...log.events import Compaction, Event, JSONValue
from ...window.items import ContextItem
from ...window.policies.presets import ToolPolicy
from ...window.state import TaskState, derive_state
from .sections import section
from .serialize import Entry
from .statements import Facts, check_section, results_by_seq, session_text
from .truth import (
    clean_text,
    current_errors,
    current_failing,
    current_tests,
    error_quote,
    finished_steps,
    is_banner,
    refer_to_anchors,
)

REPAIR_HEADING = "## Verified Facts"
"""The heading under which verification appends what a summary left out."""


def _norm(text: str) -> str:
    return " ".join(text.split())


def _present(needle: str, *haystacks: str) -> bool:
    target = _norm(needle)
    return bool(target) and any(target in _norm(h) for h in haystacks)


@dataclass(frozen=True, kw_only=True)
class Verification:
    """What the check found and what it repaired."""

    checked: tuple[str, ...] = ()
    """The checks run."""
    missing: dict[str, list[str]] = field(default_factory=dict)
    """Check name → the facts that were missing before repair."""
    repaired: tuple[str, ...] = ()
    """Checks whose missing facts were appended to the summary."""
    statements: int = 0
    """Statements about the log checked (actions, test statuses, judgments)."""

    @property
    def ok(self) -> bool:
        """True when nothing had to be repaired."""
        return not self.repaired

    def to_dict(self) -> dict[str, JSONValue]:
        """A JSON-ready record for ``Compaction.verification``."""
        missing: dict[str, JSONValue] = {k: list(v) for k, v in self.missing.items()}
        return {
            "ok": self.ok,
            "checked": list(self.checked),
            "missing": missing,
            "repaired": list(self.repaired),
            "statements_checked": self.statements,
        }


def anchor_state(
    window_events: Sequence[Event],
    *,
    base: TaskState | None,
    first_kept_seq: int,
    leaving: Sequence[ContextItem],
    policies: Sequence[ToolPolicy],
) -> TaskState:
    """The task state at the cut, as the new window's anchors.

    Derived from the previous snapshot plus the window's events before ``first_kept_seq``, with the
    tool policies of the window's own projection (``policies``).
    Project rules that arrived mid-session (instructions among the leaving items) join the
    snapshot's system text, so they stay verbatim instead of living only in the summary.
    """
    before = [e for e in window_events if e.seq < first_kept_seq and not isinstance(e, Compaction)]
    state = derive_state(before, base=base, policies=policies)
    system = list(state.system)
    for item in leaving:
        if item.kind == "instruction" and item.message.text not in system:
            system.append(item.message.text)
    return replace(state, system=tuple(system), compactions=(base.compactions if base else 0) + 1)


def _has_next_step(summary: str) -> bool:
    lines = summary.splitlines()
    for n, line in enumerate(lines):
        if line.lstrip().startswith("#") and line.strip().lstrip("#").strip().lower().startswith(_titles("next_steps")):
            for following in lines[n + 1 :]:
                if following.lstrip().startswith("#"):
                    break
                body = following.strip().lstrip("-*0123456789.[] ").strip()
                if body and body.lower() not in ("(none)", "none", "n/a"):
                    return True
    return False


def _next_step(state: TaskState) -> str:
    if current_failing(state):
        return "Make the failing tests pass: " + ", ".join(current_failing(state)[:8])
    errors = current_errors(state)
    if errors:
        return "Resolve: " + errors[-1][0]
    if state.last_assistant_text:
        return "Continue from: " + _norm(state.last_assistant_text)[:300]
    if state.latest_user_intent:
        return "Serve the latest request: " + _norm(state.latest_user_intent)[:300]
    return "Continue with the goal, starting from the most recent messages."


def verify_summary(
    summary: str,
    *,
    state: TaskState,
    anchors: TaskState | None,
    kept_text: str,
    entries: Sequence[Entry] = (),
    kept_ids: frozenset[str] = frozenset(),
) -> tuple[str, Verification]:
    """Check the window a summary opens against ``state``; return the repaired summary and the record.

    ``anchors`` is the pinned snapshot (None when anchors are off); ``kept_text`` is the text of
    the items kept verbatim and ``kept_ids`` their event ids; ``entries`` the raw events of the
    window (which steps have finished).
    """
    pinned_goal = anchors.goal if anchors else ""
    pinned_constraints = anchors.constraints if anchors else ()
    missing: dict[str, list[str]] = {}
    if state.goal and not (_present(state.goal, pinned_goal) or _present(state.goal, summary, kept_text)):
        missing["goal"] = [state.goal]
    missing["constraints"] = [
        c for c in state.constraints if c not in pinned_constraints and not _present(c, summary, kept_text)
    ]
    missing["files_modified"] = [f for f in state.files_modified if not _present(f, summary, kept_text)]
    missing["unresolved_errors"] = [
        e
        for e, event_id in current_errors(state)
        if event_id not in kept_ids and not _present(error_quote(e) or e, summary, kept_text)
    ]
    missing["failing_tests"] = [t for t in current_failing(state) if not _present(t, summary, kept_text)]
    statements: list[int] = [0]
    summary, corrected = correct_summary(summary, state=state, anchors=anchors, entries=entries, counted=statements)
    if not _has_next_step(summary):
        missing["next_step"] = [_next_step(state)]
    missing = {k: v for k, v in missing.items() if v}
    found = {**missing, **corrected}
    if not found:
        return summary, Verification(checked=CHECKS, statements=statements[0])
    if missing:
        summary = summary + "\n\n" + _repair_block(missing)
    return summary, Verification(checked=CHECKS, missing=found, repaired=tuple(found), statements=statements[0])


CHECKS: tuple[str, ...] = (
    "goal",
    "constraints",
    "files_modified",
    "unresolved_errors",
    "failing_tests",
    "next_step",
    "escapes",
    "finished_in_progress",
    "closed_failures",
    "banner_failures",
    "repeated_anchors",
    "wrong_labels",
    "wrong_outcomes",
    "wrong_test_status",
    "untrue_statements",
)
"""Every check :func:`verify_summary` runs, in order."""

_SECTION_LINE = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*$")
_BANNER_RUN = re.compile(r"[=_*~+-]{4,}[^=_*~+\n]*?(?:[=_*~+-]{4,}|$)")


def _titles(*keys: str) -> tuple[str, ...]:
    return tuple(section(k).title.lower() for k in keys)


def _sections(summary: str) -> list[tuple[str, list[str]]]:
    """(heading, lines) pairs in order; text before the first heading has the heading ``""``."""
    out: list[tuple[str, list[str]]] = [("", [])]
    for line in summary.splitlines():
        m = _SECTION_LINE.match(line)
        if m:
            out.append((m.group(1).strip().lower(), [line]))
        else:
            out[-1][1].append(line)
    return out


def correct_summary(
    summary: str,
    *,
    state: TaskState,
    anchors: TaskState | None,
    entries: Sequence[Entry],
    counted: list[int] | None = None,
) -> tuple[str, dict[str, list[str]]]:
    """``summary`` with what is no longer true corrected, and check name → what was corrected.

    ``entries`` are the events the window covers, raw (for which steps have finished, and what each
    statement about an event must match); ``counted[0]`` grows by the statements checked.
    """
    corrected: dict[str, list[str]] = {}
    cleaned = clean_text(summary.replace("\r\n", "\n")).replace("\x00", "")
    if cleaned != summary.replace("\r\n", "\n"):
        corrected["escapes"] = ["terminal escapes or control characters"]
    finished = [_norm(t) for t in finished_steps(entries)]
    still = current_tests(state)
    closed = [n for t in state.tests if not t.passed and t not in still for n in (t.target, *t.failing)]
    facts = Facts(
        results_by_seq(entries),
        session_text(entries, anchors or state) if entries else None,
        counted if counted is not None else [0],
        min((e.seq for e in entries if e.seq), default=0),
    )
    out: list[str] = []
    for heading, lines in _sections(cleaned):
        body = lines
        if heading.startswith(_titles("in_progress", "next_steps")):
            body = _drop_finished(lines, finished, corrected)
        elif heading.startswith(_titles("blocked", "test_status", "critical_context")):
            body = _drop_closed(lines, closed, corrected)
        elif heading.startswith(_titles("failed_attempts")):
            body = _cut_banners(lines, corrected)
        out += check_section(heading, body, facts, corrected)
    text = "\n".join(out)
    if anchors is not None:
        text, repeated = refer_to_anchors(text, anchors)
        if repeated:
            corrected["repeated_anchors"] = repeated
    return text, corrected


def _drop_finished(lines: list[str], finished: list[str], corrected: dict[str, list[str]]) -> list[str]:
    keep: list[str] = []
    for line in lines:
        flat = _norm(line)
        named = flat.split(": ", 1)[-1]
        hit = next((f for f in finished if f[:80] in flat or (named in f and len(named) >= 0.6 * len(f))), None)
        if hit is None or _SECTION_LINE.match(line):
            keep.append(line)
        else:
            corrected.setdefault("finished_in_progress", []).append(line.strip())
    return keep


def _drop_closed(lines: list[str], closed: list[str], corrected: dict[str, list[str]]) -> list[str]:
    keep: list[str] = []
    for line in lines:
        stale = any(t in line for t in closed) and "passed" not in line.lower()
        if stale and not _SECTION_LINE.match(line):
            corrected.setdefault("closed_failures", []).append(line.strip())
        else:
            keep.append(line)
    return keep


def _cut_banners(lines: list[str], corrected: dict[str, list[str]]) -> list[str]:
    keep: list[str] = []
    for line in lines:
        if _SECTION_LINE.match(line) or not _BANNER_RUN.search(line):
            keep.append(line)
            continue
        cut = _BANNER_RUN.sub("", line).rstrip(" :|")
        corrected.setdefault("banner_failures", []).append(line.strip())
        if cut.strip("-* ") and not is_banner(cut):
            keep.append(cut)
    return keep


_REPAIR_TITLES = {
    "goal": "### Goal (verbatim)",
    "constraints": "### Constraints (verbatim)",
    "files_modified": "### Modified Files",
    "unresolved_errors": "### Unresolved Errors",
    "failing_tests": "### Failing Tests",
}


def _repair_block(missing: dict[str, list[str]]) -> str:
    lines = [REPAIR_HEADING, "_Added by verification: the summary above left these out._"]
    for key, title in _REPAIR_TITLES.items():
        if key in missing:
            lines.append(title)
            lines += [f"- {v}" for v in missing[key]]
    if "next_step" in missing:
        lines += [section("next_steps").heading, f"1. {missing['next_step'][0]}"]
    return "\n".join(lines)


def reground_reason(previous: Compaction | None, *, every: int, after_repair: bool) -> str:
    """Why this compaction should re-ground from raw events, or ``""`` when it should not.

    ``every``: re-ground on every K-th compaction of the session (0 turns it off);
    ``after_repair``: re-ground when the previous compaction's verification had to repair.
    """
    if previous is None:
        return ""
    number = TaskState.from_dict(previous.state).compactions + 1
    if every > 0 and number % every == 0:
        return f"compaction {number} is a multiple of {every}"
    repaired = previous.verification.get("repaired")
    if after_repair and isinstance(repaired, list) and repaired:
        return f"the previous compaction had to repair: {', '.join(str(r) for r in repaired)}"
    return ""
