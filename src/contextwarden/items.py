"""Context items: what events become in the model's view, with tier and lifecycle."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .context import Message
from .policies.resources import Resource


class Tier(enum.IntEnum):
    """Priority tiers (seed 002). Under pressure tier 6 goes first; tiers 0 and 1 never go."""

    SYSTEM = 0
    """System, safety and policy instructions."""
    GOAL = 1
    """The current goal and the latest steering."""
    TASK_STATE = 2
    """Unresolved task state (failing tests, open errors, the summary)."""
    WORKING_SET = 3
    """The current working set (files being changed)."""
    RECENT_TOOL = 4
    """Recent tool results."""
    HISTORY = 5
    """Older conversation."""
    METADATA = 6
    """Low-value metadata."""


class Lifecycle(str, enum.Enum):
    """Where an item is in its life."""

    FRESH = "fresh"
    REFERENCED = "referenced"
    SUPERSEDED = "superseded"
    STALE = "stale"
    EVICTABLE = "evictable"
    MASKED = "masked"


@dataclass(frozen=True, kw_only=True)
class ContextItem:
    """One unit of the model's view, projected from one event (or a summary/pinned block)."""

    id: str
    """The source event's id (``summary:<id>``/``pinned:<id>`` for blocks made by a compaction)."""
    kind: str
    """The source event's kind, or ``summary``/``pinned``."""
    message: Message
    """How it renders."""
    tokens: int
    """Tokens of ``message`` (content plus per-message overhead)."""
    tier: Tier
    """Priority tier."""
    pinned: bool = False
    """Must stay visible verbatim."""
    compressible: bool = True
    """May be summarized by compaction."""
    evictable: bool = False
    """May be replaced by a placeholder (tool results)."""
    source_ids: tuple[str, ...] = ()
    """Events it came from."""
    resources: tuple[Resource, ...] = ()
    """Files, URLs or test targets its tool call read, changed or ran."""
    state: Lifecycle = Lifecycle.FRESH
    """Lifecycle state."""
    recency: int = 0
    """Seq of the source event (higher is newer)."""
    references: int = 0
    """How many later calls touched the same resources."""
    original_tokens: int = 0
    """Tokens of the full original output (before truncation or replacement)."""
    truncated: bool = False
    """Whether ingestion truncated it."""
