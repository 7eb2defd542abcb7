"""How a replay runs (shared by the engine and the offline optimum)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import UsageError
from .costmodel import CacheTTL


@dataclass(frozen=True, kw_only=True)
class ReplaySettings:
    """How a replay runs. Vary it with ``dataclasses.replace``."""

    model: str | None = None
    """Price and budget every request as this model; None: each transcript's own model (see :mod:`.reference`)."""
    interval_seconds: float = 30.0
    """Seconds between requests when the transcript has no timestamps."""
    cache_ttl: CacheTTL | None = None
    """Explicit caching: the lifetime breakpoints are written with; None: the transcript's own (:mod:`.reference`)."""
    optimum: bool = True
    """Compute the offline optimum of every transcript (see :mod:`.optimum`)."""
    summarizer_model: str | None = None
    """The profile summarizer calls are priced with (None: the replay's model)."""

    def __post_init__(self) -> None:
        """Refuse an interval no clock can keep (negative, NaN or infinite)."""
        interval = self.interval_seconds
        usable = isinstance(interval, int | float) and not isinstance(interval, bool)
        if not usable or not math.isfinite(interval) or interval < 0:
            raise UsageError(f"interval must be a finite number of seconds >= 0, got {interval!r}")
