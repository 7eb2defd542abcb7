"""Token counting: exact counters, the default heuristic, per-event caching, usage anchoring, calibration.

- :class:`TokenCounter` is the seam: ``name``, ``exact`` and ``count(text)``.
- :class:`HeuristicCounter` (no dependencies) estimates o200k counts from bytes and scripts and
  errs high; :class:`ExactCounter` counts o200k_base / cl100k_base exactly, offline, with the
  ``tokenizers`` extra. :func:`best_counter` picks the best one for a tokenizer family.
- :class:`EventTokenCache` counts each event once per counter; :class:`CachedCounter` does the
  same for repeated texts.
- :func:`estimate_context_tokens` anchors on the provider's last reported usage and estimates only
  what came after; :func:`calibrate_from_events` learns a per-session correction factor.
"""

from __future__ import annotations

from ._anchor import ContextEstimate, calibrate_from_events, estimate_context_tokens
from ._cache import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    TOOL_CALL_OVERHEAD,
    CachedCounter,
    EventTokenCache,
    event_tokens,
)
from ._calibrated import CalibratedCounter
from ._exact import ENCODINGS, ExactCounter, available_counters, best_counter, seed_tiktoken_cache
from ._heuristic import HeuristicCounter, HeuristicWeights
from ._protocol import TokenCounter

__all__ = [
    "ENCODINGS",
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "TOOL_CALL_OVERHEAD",
    "CachedCounter",
    "CalibratedCounter",
    "ContextEstimate",
    "EventTokenCache",
    "ExactCounter",
    "HeuristicCounter",
    "HeuristicWeights",
    "TokenCounter",
    "available_counters",
    "best_counter",
    "calibrate_from_events",
    "estimate_context_tokens",
    "event_tokens",
    "seed_tiktoken_cache",
]
