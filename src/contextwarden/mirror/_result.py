"""What one mirror call did: its outcome and the events it stored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..log.events import Compaction, Event

Outcome = Literal["unchanged", "extend", "behind", "trim", "reset"]


@dataclass(frozen=True, kw_only=True)
class MirrorResult:
    """What one :func:`~contextwarden.mirror.mirror_history` call did."""

    outcome: Outcome
    """``unchanged``, ``extend``, ``behind``, ``trim`` or ``reset`` (see :mod:`contextwarden.mirror`)."""
    appended: tuple[Event, ...] = ()
    """The stored copies of the history's events that were new, in order (window event excluded)."""
    window_event: Compaction | None = None
    """The stored window event recorded for a trim or a reset, if one was needed."""
    matched: int = 0
    """How many leading events of the history were already in the log."""
    last_seq: int = 0
    """The session's last seq after the call."""
