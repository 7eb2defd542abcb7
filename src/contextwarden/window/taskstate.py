"""The task state: what the agent is doing and what it must not forget, and its JSON snapshot.

:mod:`.state` derives it from events; compaction stores :meth:`TaskState.to_dict` in the
compaction event, so a window opened after it needs no older events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class TestStatus:
    """The latest run of one test target."""

    target: str
    """What was run (``tests/test_x.py``, ``all``)."""
    passed: bool
    """Whether the run succeeded."""
    failing: tuple[str, ...] = ()
    """Names of failing tests, when the output lists them."""
    seq: int = 0
    """Seq of the result."""
    event_id: str = ""
    """Id of the tool result holding the full output."""


@dataclass(frozen=True, kw_only=True)
class TaskState:
    """What the agent is doing and what it must not forget. Build it with :func:`derive_state`."""

    system: tuple[str, ...] = ()
    """Leading system/developer instructions, verbatim, in order."""
    goal: str = ""
    """The original task: the first user message, verbatim (capped)."""
    goal_event_id: str = ""
    """Id of the event holding the goal."""
    constraints: tuple[str, ...] = ()
    """User constraints (explicit pins and rule sentences), oldest first."""
    latest_steering: str = ""
    """The most recent steering, verbatim."""
    latest_user_intent: str = ""
    """The most recent user message or steering."""
    files_read: tuple[str, ...] = ()
    """Files read, in first-read order."""
    files_modified: tuple[str, ...] = ()
    """Files changed, in first-change order."""
    tests: tuple[TestStatus, ...] = ()
    """Latest run per test target."""
    unresolved_errors: tuple[str, ...] = ()
    """Recent error lines not yet followed by a success of the same action."""
    unresolved_error_ids: tuple[str, ...] = ()
    """Ids of the tool results holding those errors (never masked while unresolved)."""
    working_set: tuple[str, ...] = ()
    """Files the agent is working on, most relevant first (``docs/behaviours.md``, row 31): files with an unresolved
    failure, files the goal, constraints or steering name, modified files, then files read recently
    (they decay), each group by recency and reference count."""
    last_assistant_text: str = ""
    """The latest assistant text, a hint of the next step."""
    compactions: int = 0
    """Compactions so far."""
    references: dict[str, int] = field(default_factory=dict)
    """Resource key → how many calls touched it (drives the working set)."""
    last_touch: dict[str, int] = field(default_factory=dict)
    """Resource key → seq of the last call that touched it."""

    @property
    def failing_tests(self) -> tuple[str, ...]:
        """Failing tests of the latest runs that did not pass."""
        out: list[str] = []
        for t in self.tests:
            if not t.passed:
                out.extend(t.failing or (t.target,))
        return tuple(out)

    @property
    def exploring(self) -> bool:
        """Whether the agent has only read so far: no file changed, no test run, no error unresolved.

        Until then it is gathering context and any file it read may be the next one it needs; the first
        change, test run or failure gives the work a focus (in the working set an edit raises its file, the
        rest decays).
        """
        return not (self.files_modified or self.tests or self.unresolved_errors)

    @property
    def evidence_ids(self) -> frozenset[str]:
        """Tool results that must stay visible: failing test runs and unresolved errors."""
        return frozenset((*self.unresolved_error_ids, *(t.event_id for t in self.tests if not t.passed)))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready snapshot (stored in compaction events)."""
        return {
            "system": list(self.system),
            "goal": self.goal,
            "goal_event_id": self.goal_event_id,
            "constraints": list(self.constraints),
            "latest_steering": self.latest_steering,
            "latest_user_intent": self.latest_user_intent,
            "files_read": list(self.files_read),
            "files_modified": list(self.files_modified),
            "tests": [
                {
                    "target": t.target,
                    "passed": t.passed,
                    "failing": list(t.failing),
                    "seq": t.seq,
                    "event_id": t.event_id,
                }
                for t in self.tests
            ],
            "unresolved_errors": list(self.unresolved_errors),
            "unresolved_error_ids": list(self.unresolved_error_ids),
            "working_set": list(self.working_set),
            "last_assistant_text": self.last_assistant_text,
            "compactions": self.compactions,
            "references": dict(self.references),
            "last_touch": dict(self.last_touch),
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> TaskState:
        """Rebuild a snapshot made by :meth:`to_dict` (missing keys take defaults)."""
        tests = tuple(
            TestStatus(
                target=str(t["target"]),
                passed=bool(t["passed"]),
                failing=tuple(t.get("failing", ())),
                seq=int(t.get("seq", 0)),
                event_id=str(t.get("event_id", "")),
            )
            for t in raw.get("tests", ())
        )
        return cls(
            system=tuple(raw.get("system", ())),
            goal=str(raw.get("goal", "")),
            goal_event_id=str(raw.get("goal_event_id", "")),
            constraints=tuple(raw.get("constraints", ())),
            latest_steering=str(raw.get("latest_steering", "")),
            latest_user_intent=str(raw.get("latest_user_intent", "")),
            files_read=tuple(raw.get("files_read", ())),
            files_modified=tuple(raw.get("files_modified", ())),
            tests=tests,
            unresolved_errors=tuple(raw.get("unresolved_errors", ())),
            unresolved_error_ids=tuple(raw.get("unresolved_error_ids", ())),
            working_set=tuple(raw.get("working_set", ())),
            last_assistant_text=str(raw.get("last_assistant_text", "")),
            compactions=int(raw.get("compactions", 0)),
            references={str(k): int(v) for k, v in dict(raw.get("references", {})).items()},
            last_touch={str(k): int(v) for k, v in dict(raw.get("last_touch", {})).items()},
        )
