"""What the planner keeps verbatim: the evidence the agent's next step needs.

Protection is one rule with two strengths, both read off the task state's working set (the files the
agent is working on, most relevant first: files with an unresolved failure, files the task names,
files it changed, then files the latest steps touched, which decay):

- **evidence**, never masked while current (a newer result on the same thing, or a later write, still
  replaces it): failing test runs and unresolved errors; the latest current read of every file the
  task names, an unresolved failure involves or a shown result points back to; of the
  :attr:`Protection.working_set_files` most relevant working-set files (a file the session came back to
  before one it read once); and of the :attr:`Protection.modified_files` working-set files the session
  changed last;
- **kept**, left alone by a voluntary batch but masked under pressure: while the session has only read
  (:attr:`~contextwarden.window.taskstate.TaskState.exploring`), the latest current read of every file
  it read, the 12 touched last, as many as fit in :attr:`Protection.exploration_tokens`
  (:attr:`Protection.exploration_reads`); and, when asked, of a working-set
  file while it is among the latest steps (:attr:`Protection.working_set_reads`).

Under pressure the order of loss follows the tiers (6 first), and a result touching a working-set file
counts as :attr:`~contextwarden.window.tiers.Tier.WORKING_SET`: so the latest read of the file being
edited outlives a large test or build log of the same age (``EditQueue.loss_key``). The numbers behind
each default are in ``docs/benchmarks.md``, "Planner defaults and why".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..window.items import ContextItem
from ..window.state import MAX_WORKING_SET
from ..window.taskstate import TaskState

__all__ = ["Protected", "Protection", "WorkingSetFacts", "protect"]


@dataclass(frozen=True, kw_only=True)
class Protection:
    """Which tool results the planner keeps verbatim (part of :class:`~.planner.PlannerSettings`)."""

    working_set_files: int = 1
    """The latest current read of this many most relevant working-set files is never masked (0: none).
    The task's files rank first and count among them; after them a file the session came back to (touched
    more than once) outranks one it read once since: the file being edited stays in view while the logs
    of the same age go. More files cost more than they keep (docs/benchmarks.md, "Planner defaults and
    why")."""
    modified_files: int = 3
    """The latest current read of this many working-set files the session changed, the most recently
    touched first, is never masked (0: none). Protecting every changed file costs more on sessions that
    change a new file every few turns; 3 keeps the files being fixed in view."""
    working_set_reads: int = 0
    """A voluntary batch leaves the latest current read of a working-set file alone while it is among the
    last this many tool results (0: none); pressure may mask it, after every other result of its tier.
    8 kept every next-action read on the bundled real sessions, for 2-4% more cost on the generated long
    ones, so it is off by default (docs/benchmarks.md, "Planner defaults and why")."""
    exploration_reads: bool = True
    """While the session has only read (no file changed, no test run, no error unresolved), a voluntary
    batch leaves the latest current read of every file it read alone (the 12 touched last): an agent
    still exploring comes back to what it read."""
    exploration_tokens: int = 16_384
    """...as long as those reads together fit in this many tokens, the file touched last first (a read
    that does not fit is left to the other rules; 0: none is kept). Re-reading a file costs its tokens
    once, keeping it costs them on every request: without a bound, a session that reads many large
    logs keeps twelve of them and fills the window up to the compaction trigger (docs/benchmarks.md,
    "Planner defaults and why")."""


class WorkingSetFacts(Protocol):
    """What protection reads from a window (``Projection`` implements it)."""

    @property
    def state(self) -> TaskState:
        """The task state derived from the window's events."""
        ...

    @property
    def task_files(self) -> tuple[str, ...]:
        """Working-set files the task names or an unresolved failure involves."""
        ...

    def latest_read(self, key: str) -> str | None:
        """The id of the latest read of file ``key`` that no later write made stale, if any."""
        ...

    def pointed_files(self) -> list[str]:
        """Files a result still shown points back to (:mod:`contextwarden.window.pointers`)."""
        ...

    def recent_tool_results(self, count: int) -> list[str]:
        """Ids of the last ``count`` tool results, oldest first."""
        ...

    def item(self, item_id: str) -> ContextItem | None:
        """The item with that id, if it is in the window."""
        ...


@dataclass(frozen=True, kw_only=True)
class Protected:
    """The tool results a request must keep: what no batch masks, and what only pressure may mask."""

    evidence: frozenset[str] = frozenset()
    """Never masked while current."""
    kept: frozenset[str] = frozenset()
    """Left alone by a voluntary batch; masked under pressure in the order of loss."""


def protect(facts: WorkingSetFacts, protection: Protection) -> Protected:
    """The results ``protection`` keeps in the window ``facts`` describes (see the module docstring)."""
    state = facts.state
    working_set = state.working_set
    changed = [k for k in working_set if k in state.files_modified][: max(protection.modified_files, 0)]
    # A file the session came back to is the one it is working on, more than a file it read once since.
    revisited = sorted(working_set, key=lambda key: state.references.get(key, 0) < 2)
    head = revisited[: max(protection.working_set_files, 0)]
    files = dict.fromkeys((*facts.task_files, *head, *changed, *facts.pointed_files()))
    evidence = state.evidence_ids | _latest_reads(facts, files)
    kept: frozenset[str] = frozenset()
    if protection.exploration_reads and state.exploring:
        touched = state.last_touch
        read = sorted(state.files_read, key=lambda key: touched.get(key, 0), reverse=True)[:MAX_WORKING_SET]
        kept = _within(facts, read, protection.exploration_tokens)
    if protection.working_set_reads > 0:
        recent = frozenset(facts.recent_tool_results(protection.working_set_reads))
        kept |= _latest_reads(facts, working_set) & recent
    return Protected(evidence=evidence, kept=kept - evidence)


def _latest_reads(facts: WorkingSetFacts, files: Iterable[str] | Sequence[str]) -> frozenset[str]:
    latest = (facts.latest_read(key) for key in files)
    return frozenset(i for i in latest if i is not None)


def _within(facts: WorkingSetFacts, files: Sequence[str], tokens: int) -> frozenset[str]:
    """The latest reads of ``files``, in that order, that fit together in ``tokens``."""
    kept: set[str] = set()
    room = tokens
    for key in files:
        read = facts.latest_read(key)
        item = facts.item(read) if read is not None else None
        if item is not None and item.tokens <= room:
            kept.add(item.id)
            room -= item.tokens
    return frozenset(kept)
