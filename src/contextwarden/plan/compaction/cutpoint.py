"""Where a compaction cuts the window: what is summarized and what stays verbatim.

At least ``keep_recent`` tokens of the newest conversation stay verbatim. Walking back from the
newest item until that much is kept gives a candidate; the cut then moves further back (never
forward: that would keep less) to the first position where the kept tail

- starts with a user or assistant message, never with a tool result;
- holds every tool call of every result it contains (a call batch is never split from its results);
- does not begin in the middle of a turn whose earlier assistant messages carry thinking
  (providers that replay reasoning need the thinking of the whole tool loop).

A cut on an assistant message in the middle of a turn *splits the turn*: the turn's start (its
user message and the work so far) is summarized separately as a turn prefix, so a single turn too
large to keep still compacts. A window with nothing old enough before a valid cut gives ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...window.items import ContextItem

BLOCK_KINDS = frozenset({"pinned", "summary"})
"""Items a previous compaction put at the window's start; they are never part of the transcript."""


@dataclass(frozen=True, kw_only=True)
class CutPoint:
    """The result of :func:`find_cut`."""

    first_kept_index: int
    """Index into the items of the first one kept verbatim."""
    first_kept_seq: int
    """Seq of the first kept event: the compaction's ``first_kept_seq``."""
    history: tuple[ContextItem, ...]
    """Items summarized as history (before the split turn, when there is one)."""
    turn_prefix: tuple[ContextItem, ...]
    """The start of a turn the cut splits; summarized separately. Empty when the cut is at a turn start."""
    kept: tuple[ContextItem, ...]
    """Items kept verbatim."""
    kept_tokens: int
    """Tokens of the kept items."""

    @property
    def leaving(self) -> tuple[ContextItem, ...]:
        """Every item that leaves the window (history and turn prefix)."""
        return self.history + self.turn_prefix


def body_start(items: Sequence[ContextItem]) -> int:
    """Index of the first item after the blocks a previous compaction opened the window with."""
    n = 0
    while n < len(items) and items[n].kind in BLOCK_KINDS:
        n += 1
    return n


def _is_turn_start(item: ContextItem) -> bool:
    return item.message.role == "user" and item.kind not in BLOCK_KINDS


def _earliest_call_after(items: Sequence[ContextItem]) -> list[int]:
    """For each position p: the smallest index of a call answered by a result at or after p.

    A result answers the nearest earlier call with its id: some providers reuse ids such as
    ``call_0`` in every turn, and pairing with the first one would forbid every later cut.
    """
    latest_call: dict[str, int] = {}
    answered: dict[int, int] = {}
    for n, item in enumerate(items):
        for call in item.message.tool_calls:
            latest_call[call.id] = n
        message = item.message
        if message.role == "tool" and message.tool_call_id in latest_call:
            answered[n] = latest_call[message.tool_call_id]
    out = [len(items)] * (len(items) + 1)
    for n in range(len(items) - 1, -1, -1):
        out[n] = min(out[n + 1], answered.get(n, len(items)))
    return out


def _turn_starts(items: Sequence[ContextItem], start: int) -> list[int]:
    """For each position: index of the user message that opened its turn (``start`` when none did)."""
    out: list[int] = []
    current = start
    for n, item in enumerate(items):
        if n >= start and _is_turn_start(item):
            current = n
        out.append(current)
    return out


def _thinking_before(items: Sequence[ContextItem], turn_start: list[int]) -> list[bool]:
    """For each position: whether an assistant message earlier in the same turn carries thinking."""
    out: list[bool] = []
    seen = False
    for n, item in enumerate(items):
        if n == 0 or turn_start[n] != turn_start[n - 1] or _is_turn_start(item):
            seen = False
        out.append(seen)
        if item.message.role == "assistant" and item.message.thinking:
            seen = True
    return out


def find_cut(
    items: Sequence[ContextItem], *, keep_recent: int, keep_ids: frozenset[str] = frozenset()
) -> CutPoint | None:
    """Choose the cut (see the module docstring); ``None`` when nothing is old enough to summarize.

    ``keep_ids`` are items that should stay verbatim (failing test output, unresolved errors): the
    cut moves back to keep the earliest of them, as long as the kept tail stays within twice
    ``keep_recent``.
    """
    start = body_start(items)
    kept_tokens = 0
    candidate = len(items)
    while candidate > start and kept_tokens < keep_recent:
        candidate -= 1
        kept_tokens += items[candidate].tokens
    if kept_tokens < keep_recent or candidate <= start:
        return None
    if keep_ids:
        earliest = next((n for n in range(start + 1, candidate) if items[n].id in keep_ids), None)
        if earliest is not None and kept_tokens + sum(i.tokens for i in items[earliest:candidate]) <= 2 * keep_recent:
            candidate = earliest
    earliest_call = _earliest_call_after(items)
    turn_start = _turn_starts(items, start)
    thinking_before = _thinking_before(items, turn_start)
    # At least the newest item stays, so the kept tail is never empty.
    for cut in range(min(candidate, len(items) - 1), start, -1):
        item = items[cut]
        if item.message.role not in ("user", "assistant") or item.kind in BLOCK_KINDS:
            continue
        if earliest_call[cut] < cut:
            continue  # a result at or after the cut answers a call before it
        if item.message.role == "assistant" and thinking_before[cut]:
            continue
        return _make(items, start, cut, turn_start[cut])
    return None


def _make(items: Sequence[ContextItem], start: int, cut: int, turn: int) -> CutPoint:
    # A turn that began before this window has ``turn == start``: all of it is prefix.
    split = items[cut].message.role == "assistant" and turn < cut
    history_end = turn if split else cut
    kept = tuple(items[cut:])
    return CutPoint(
        first_kept_index=cut,
        first_kept_seq=items[cut].recency,
        history=tuple(items[start:history_end]),
        turn_prefix=tuple(items[history_end:cut]) if split else (),
        kept=kept,
        kept_tokens=sum(i.tokens for i in kept),
    )
