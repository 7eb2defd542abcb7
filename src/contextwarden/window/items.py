"""Context items: what events become in the model's view, with tier and lifecycle, and their list."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

from ..context import Message
from ..log.events import EventKind
from .policies.resources import Resource
from .tiers import Tier

__all__ = ["ContextItem", "ItemList", "Lifecycle", "Tier"]


class Lifecycle(str, enum.Enum):
    """What the model sees of an item *now* (a pending edit changes nothing until it is applied)."""

    FRESH = "fresh"
    """Shown as projected at ingestion."""
    SUPERSEDED = "superseded"
    """Replaced by a placeholder: a newer result on the same resource is the current one."""
    STALE = "stale"
    """Replaced by a placeholder: a later change made it out of date."""
    MASKED = "masked"
    """Replaced by a placeholder for age or space."""


REDUCED = frozenset({Lifecycle.MASKED, Lifecycle.SUPERSEDED, Lifecycle.STALE})
"""States in which an item shows a placeholder; no edit changes it again."""


ItemKind = EventKind | Literal["summary", "pinned"]
"""What an item was projected from: an event of that kind, or a block a compaction made."""


@dataclass(frozen=True, kw_only=True)
class ContextItem:
    """One unit of the model's view, projected from one event (or a summary/pinned block)."""

    id: str
    """The source event's id (``summary:<id>``/``pinned:<id>`` for blocks made by a compaction)."""
    kind: ItemKind
    """The source event's kind, or ``summary``/``pinned``."""
    message: Message
    """How it renders."""
    tokens: int
    """Tokens of ``message`` (content plus per-message overhead)."""
    tier: Tier
    """Priority tier: under pressure higher tiers are masked first; tiers 0 and 1 are never edited."""
    evictable: bool = False
    """An edit may still replace it with a placeholder (a tool result not yet reduced)."""
    source_ids: tuple[str, ...] = ()
    """Events it came from."""
    resources: tuple[Resource, ...] = ()
    """Files, URLs or test targets its tool call read, changed or ran."""
    state: Lifecycle = Lifecycle.FRESH
    """Lifecycle state."""
    recency: int = 0
    """Seq of the source event (higher is newer)."""
    original_tokens: int = 0
    """Tokens of the full original output (before truncation or replacement)."""
    truncated: bool = False
    """Whether ingestion truncated it."""

    @property
    def pinned(self) -> bool:
        """Never edited: tiers 0 and 1 (instructions, the goal, steering, the compaction's pinned block)."""
        return self.tier <= Tier.GOAL


def _settled(item: ContextItem) -> int:
    """Tokens of ``item`` when no edit can change it any more (pinned, or already a placeholder), else 0."""
    return item.tokens if item.pinned or item.state in REDUCED else 0


class ItemList:
    """The items of a window in order, with positions by id and prefix sums of their tokens."""

    def __init__(self) -> None:
        self.items: list[ContextItem] = []
        self.total = 0
        self.settled = 0
        """Tokens of the items no edit can change any more: pinned ones and placeholders."""
        self._pos: dict[str, int] = {}
        self._cum: list[int] = []
        self._cum_valid = 0

    def __len__(self) -> int:
        return len(self.items)

    def get(self, item_id: str) -> ContextItem | None:
        """The item with that id, if it is in the window."""
        pos = self._pos.get(item_id)
        return self.items[pos] if pos is not None else None

    def position(self, item_id: str) -> int:
        """Index of the item (KeyError when it is not in the window)."""
        return self._pos[item_id]

    def find(self, item_id: str) -> int | None:
        """Index of the item, or None."""
        return self._pos.get(item_id)

    def push(self, item: ContextItem) -> int:
        """Append ``item``; returns its position."""
        pos = len(self.items)
        self._pos[item.id] = pos
        self.items.append(item)
        self.total += item.tokens
        self.settled += _settled(item)
        return pos

    def put(self, pos: int, item: ContextItem) -> None:
        """Replace the item at ``pos`` (same id), keeping the totals true."""
        old = self.items[pos]
        self.total += item.tokens - old.tokens
        self.settled += _settled(item) - _settled(old)
        self.items[pos] = item
        self._cum_valid = min(self._cum_valid, pos)

    def tail_tokens(self, position: int) -> int:
        """Tokens of the items from ``position`` on (prefix sums, rebuilt only from the first change)."""
        if self._cum_valid < len(self.items):
            running = self._cum[self._cum_valid - 1] if self._cum_valid else 0
            del self._cum[self._cum_valid :]
            for item in self.items[self._cum_valid :]:
                running += item.tokens
                self._cum.append(running)
            self._cum_valid = len(self.items)
        before = self._cum[position - 1] if position > 0 else 0
        return self.total - before
