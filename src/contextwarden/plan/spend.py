"""A spending limit for a whole session tree: a root session and every subagent under it.

The window's budget caps one request, but nothing caps what a task and its subagents spend
together. Here every provider usage report counts as

    weighted = output_tokens × sampling_weight + uncached input × prefill_weight

(uncached input = input − cache reads: cached input is cheap and not counted), summed over the root
and all its descendants. Call :meth:`SpendTracker.check` before each model call of any session in the
tree; once the sum reaches the limit it raises :class:`~contextwarden.errors.SpendLimitReached`, and
keeps raising for every session of that tree (usage only grows in an append-only log, and the
tracker also remembers that the limit was reached).

Reminders: when the remaining amount falls below one of ``reminders``, :meth:`SpendTracker.notice`
returns a ``budget_notice`` fragment to show the model. A notice is due when none for that level is
visible in the session's current window, so after a compaction drops it, it is delivered again.
:meth:`SpendTracker.deliver` appends it as a developer instruction.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import SpendLimitReached, UsageError
from ..fragments import DEFAULT_REGISTRY, FragmentRegistry
from ..log.events import Instruction, UsageReport
from ..log.store._protocol import SessionInfo, SessionStore
from ..tokens import HeuristicCounter, TokenCounter

NOTICE_SOURCE = "budget_notice"
"""The ``source`` of the instruction events :meth:`SpendTracker.deliver` appends."""

_LEVEL = re.compile(r"Less than ([\d,]+) weighted tokens remain")


@dataclass(frozen=True, kw_only=True)
class SpendLimit:
    """The limit, the weights and the reminder levels of a session tree's spending."""

    limit: int
    """Weighted tokens the whole tree may spend."""
    sampling_weight: float = 1.0
    """Weight of an output token (generation is the expensive part)."""
    prefill_weight: float = 0.25
    """Weight of an uncached input token; output costs about 4x input at most providers."""
    reminders: tuple[int, ...] = ()
    """Remaining amounts at which the model is reminded (for example ``(50_000, 10_000)``); empty
    means 50%, 25% and 10% of the limit."""

    def __post_init__(self) -> None:
        if self.limit <= 0:
            raise UsageError(f"spend limit must be positive, got {self.limit}")
        if self.sampling_weight < 0 or self.prefill_weight < 0:
            raise UsageError("spend limit weights must not be negative")
        if any(r <= 0 or r >= self.limit for r in self.reminders):
            raise UsageError(f"reminder levels must lie between 0 and the limit {self.limit}: {self.reminders}")

    @property
    def levels(self) -> tuple[int, ...]:
        """Reminder levels, largest first."""
        levels = self.reminders or (self.limit // 2, self.limit // 4, self.limit // 10)
        return tuple(sorted({level for level in levels if level > 0}, reverse=True))

    def weigh(self, usage: UsageReport) -> float:
        """The weighted tokens of one usage report."""
        uncached = max(usage.input_tokens - usage.cache_read_tokens, 0)
        return usage.output_tokens * self.sampling_weight + uncached * self.prefill_weight


@dataclass(frozen=True, kw_only=True)
class TreeSpend:
    """What a session tree has spent."""

    root_session_id: str
    """The tree's root."""
    sessions: tuple[str, ...]
    """Every session counted (root first)."""
    spent: float
    """Weighted tokens spent."""
    limit: int
    """The spending limit (weighted tokens)."""

    @property
    def remaining(self) -> float:
        """Weighted tokens left (never negative)."""
        return max(self.limit - self.spent, 0.0)

    @property
    def exhausted(self) -> bool:
        """Whether nothing is left."""
        return self.spent >= self.limit


class SpendTracker:
    """Tracks and enforces a :class:`SpendLimit` over session trees of one store.

    Counts are kept per session and updated from the events appended since the last check, so a
    check reads only new events.
    """

    def __init__(
        self,
        policy: SpendLimit,
        *,
        registry: FragmentRegistry | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self.policy = policy
        self.registry = registry or DEFAULT_REGISTRY
        self.counter = counter or HeuristicCounter()
        self._tallies: dict[str, tuple[int, float]] = {}
        self._exhausted: set[str] = set()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ accounting

    def usage(self, store: SessionStore, session_id: str) -> TreeSpend:
        """What the tree holding ``session_id`` has spent so far."""
        sessions = {info.id: info for info in store.list_sessions()}
        if session_id not in sessions:
            sessions[session_id] = store.get_session(session_id)  # raises SessionNotFound
        root = _root(session_id, sessions)
        members = _descendants(root, sessions)
        spent = sum(self._tally(store, sessions[sid]) for sid in members)
        return TreeSpend(root_session_id=root, sessions=tuple(members), spent=spent, limit=self.policy.limit)

    def _tally(self, store: SessionStore, info: SessionInfo) -> float:
        with self._lock:
            last, total = self._tallies.get(info.id, (info.fork_seq, 0.0))
        if info.last_seq > last:
            for event in store.read(info.id, since_seq=max(last, info.fork_seq)):
                if isinstance(event, UsageReport):
                    total += self.policy.weigh(event)
                last = max(last, event.seq)
            with self._lock:
                self._tallies[info.id] = (last, total)
        return total

    def check(self, store: SessionStore, session_id: str) -> TreeSpend:
        """Call before each model call: raises :class:`SpendLimitReached` once the tree has reached its limit."""
        usage = self.usage(store, session_id)
        with self._lock:
            if usage.exhausted:
                self._exhausted.add(usage.root_session_id)
            exhausted = usage.root_session_id in self._exhausted
        if exhausted:
            raise SpendLimitReached(
                f"session tree {usage.root_session_id!r} has spent {usage.spent:,.0f} of its "
                f"{usage.limit:,} weighted tokens; no further model call is allowed in it "
                "(finish with what you have, or start a new task with a larger spend limit)"
            )
        return usage

    # ------------------------------------------------------------------ reminders

    def notice(self, store: SessionStore, session_id: str) -> str | None:
        """The ``budget_notice`` fragment due for ``session_id`` now, or ``None``.

        Due when the remaining amount is below a reminder level and no notice for that level (or a
        lower one) is visible in the session's current window.
        """
        usage = self.usage(store, session_id)
        crossed = [level for level in self.policy.levels if usage.remaining < level]
        if not crossed:
            return None
        level = crossed[-1]
        if any(shown <= level for shown in _visible_levels(store, session_id)):
            return None
        body = (
            f"Less than {level:,} weighted tokens remain of the {usage.limit:,} budget shared by this "
            f"task and its subagents (spent: {usage.spent:,.0f}). Prioritise finishing: wrap up the "
            "current step, avoid broad exploration, and report what is done and what is left."
        )
        return self.registry.render("budget_notice", body, self.counter).text

    def deliver(self, store: SessionStore, session_id: str) -> Instruction | None:
        """Append the due notice (if any) to the session as a developer instruction; returns it."""
        text = self.notice(store, session_id)
        if text is None:
            return None
        last = store.get_session(session_id).last_seq
        stored = store.append(
            session_id, [Instruction(text=text, role="developer", source=NOTICE_SOURCE)], expected_last_seq=last
        )
        event = stored[0]
        assert isinstance(event, Instruction)
        return event


class SpendLimitHook:
    """An ``on_before_turn`` hook for :func:`~contextwarden.loop.run_agent_loop`.

    Before each model call: raises :class:`SpendLimitReached` when the tree is spent, runs ``then``
    (for example a ``CompactionHook``), and delivers a due reminder after it, so a compaction made
    now cannot drop the reminder before the model sees it.
    """

    def __init__(
        self, tracker: SpendTracker, store: SessionStore, *, then: Callable[[str, Any], object] | None = None
    ) -> None:
        self.tracker = tracker
        self.store = store
        self.then = then

    def __call__(self, session_id: str, turn: Any) -> object:
        """Check, run the next hook, deliver a due notice; returns what the next hook returned."""
        self.tracker.check(self.store, session_id)
        result = self.then(session_id, turn) if self.then is not None else None
        self.tracker.deliver(self.store, session_id)
        return result


def _visible_levels(store: SessionStore, session_id: str) -> list[int]:
    levels: list[int] = []
    for event in store.read_window(session_id):
        if isinstance(event, Instruction) and event.source == NOTICE_SOURCE:
            match = _LEVEL.search(event.text)
            if match:
                levels.append(int(match.group(1).replace(",", "")))
    return levels


def _root(session_id: str, sessions: dict[str, SessionInfo]) -> str:
    seen = {session_id}
    current = session_id
    while True:
        parent = sessions[current].parent_session_id
        if parent is None or parent not in sessions or parent in seen:
            return current
        seen.add(parent)
        current = parent


def _descendants(root: str, sessions: dict[str, SessionInfo]) -> list[str]:
    children: dict[str, list[str]] = {}
    for info in sessions.values():
        if info.parent_session_id is not None:
            children.setdefault(info.parent_session_id, []).append(info.id)
    order, stack, seen = [], [root], set()
    while stack:
        sid = stack.pop()
        if sid in seen:
            continue
        seen.add(sid)
        order.append(sid)
        stack.extend(reversed(children.get(sid, [])))
    return order
