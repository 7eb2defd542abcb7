"""Priority tiers (``docs/behaviours.md``, row 21): the order in which the context loses things under pressure.

A module of its own, with no imports, so tool policies (``policies/presets.py``) can name the tier
of their output without importing the item model.
"""

from __future__ import annotations

import enum

__all__ = ["Tier"]


class Tier(enum.IntEnum):
    """Priority tiers. Under pressure tier 6 goes first; tiers 0 and 1 never go."""

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
