"""Anchors, post-compaction verification with repair, and the re-grounding schedule.

**Anchors.** The original goal, the user's constraints, the latest steering and project rules are
never left to a summary: the compaction stores a snapshot of the task state at the cut
(:func:`anchor_state`) and the window renders them verbatim from it (``window.pinned_text``).

**Verification.** After a summary is written, :func:`verify_summary` checks the new window against
the derived task state: the goal and every constraint are visible (pinned or in the summary),
every modified file, unresolved error and failing test is named in the summary or the kept tail,
and the summary says what to do next. Whatever is missing is appended, verbatim, to the summary,
and the record says what was repaired.

**Re-grounding.** Summary-on-summary drifts. :func:`reground_reason` says when to rebuild the
summary from the raw events of the log instead (every K compactions, or after a compaction
whose verification had to repair).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..events import Compaction, Event, JSONValue
from ..items import ContextItem
from ..state import TaskState, derive_state

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

    @property
    def ok(self) -> bool:
        """True when nothing had to be repaired."""
        return not self.repaired

    def to_dict(self) -> dict[str, JSONValue]:
        """A JSON-ready record for ``Compaction.verification``."""
        missing: dict[str, JSONValue] = {k: list(v) for k, v in self.missing.items()}
        return {"ok": self.ok, "checked": list(self.checked), "missing": missing, "repaired": list(self.repaired)}


def anchor_state(
    window_events: Sequence[Event],
    *,
    base: TaskState | None,
    first_kept_seq: int,
    leaving: Sequence[ContextItem],
) -> TaskState:
    """The task state at the cut, as the new window's anchors.

    Derived from the previous snapshot plus the window's events before ``first_kept_seq``.
    Project rules that arrived mid-session (instructions among the leaving items) join the
    snapshot's system text, so they stay verbatim instead of living only in the summary.
    """
    before = [e for e in window_events if e.seq < first_kept_seq and not isinstance(e, Compaction)]
    state = derive_state(before, base=base)
    system = list(state.system)
    for item in leaving:
        if item.kind == "instruction" and item.message.text not in system:
            system.append(item.message.text)
    return replace(state, system=tuple(system), compactions=(base.compactions if base else 0) + 1)


def _error_text(error: str) -> str:
    """The error line without the ``tool: `` prefix the state adds."""
    head, sep, rest = error.partition(": ")
    return rest if sep and " " not in head else error


def _has_next_step(summary: str) -> bool:
    lines = summary.splitlines()
    for n, line in enumerate(lines):
        if line.lstrip().startswith("#") and line.strip().lstrip("#").strip().lower().startswith("next step"):
            for following in lines[n + 1 :]:
                if following.lstrip().startswith("#"):
                    break
                body = following.strip().lstrip("-*0123456789.[] ").strip()
                if body and body.lower() not in ("(none)", "none", "n/a"):
                    return True
    return False


def _next_step(state: TaskState) -> str:
    if state.failing_tests:
        return "Make the failing tests pass: " + ", ".join(state.failing_tests[:8])
    if state.unresolved_errors:
        return "Resolve: " + state.unresolved_errors[-1]
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
) -> tuple[str, Verification]:
    """Check the window a summary opens against ``state``; return the repaired summary and the record.

    ``anchors`` is the pinned snapshot (None when anchors are off); ``kept_text`` is the text of
    the items kept verbatim.
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
        e for e in state.unresolved_errors if not _present(_error_text(e), summary, kept_text)
    ]
    missing["failing_tests"] = [t for t in state.failing_tests if not _present(t, summary, kept_text)]
    if not _has_next_step(summary):
        missing["next_step"] = [_next_step(state)]
    checked = ("goal", "constraints", "files_modified", "unresolved_errors", "failing_tests", "next_step")
    missing = {k: v for k, v in missing.items() if v}
    if not missing:
        return summary, Verification(checked=checked)
    return summary + "\n\n" + _repair_block(missing), Verification(
        checked=checked, missing=missing, repaired=tuple(missing)
    )


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
        lines += ["## Next Steps", f"1. {missing['next_step'][0]}"]
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
