"""Token counting: exact counters, the default heuristic, per-event caching, usage anchoring, calibration.

- :class:`TokenCounter` is the seam: ``name``, ``exact`` and ``count(text)``.
- :class:`HeuristicCounter` (no dependencies) estimates o200k counts from bytes and scripts and
  errs high; :class:`ExactCounter` counts o200k_base / cl100k_base exactly, offline, with the
  ``tokenizers`` extra. :func:`best_counter` picks the best one for a tokenizer family.
- :class:`EventTokenCache` counts each event once per counter; :class:`CachedCounter` does the
  same for repeated texts.
- :func:`calibrate_from_events` learns a per-session correction factor from usage reports (the
  usage-anchored size of a request is :func:`contextwarden.window.accounting.anchored_estimate`).
"""

from __future__ import annotations

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
from ._images import base64_image_tokens, data_url_image_tokens, image_size, image_tokens
from ._protocol import TokenCounter
from ._usage import calibrate_from_events

__all__ = [
    "ENCODINGS",
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "TOOL_CALL_OVERHEAD",
    "CachedCounter",
    "CalibratedCounter",
    "EventTokenCache",
    "ExactCounter",
    "HeuristicCounter",
    "HeuristicWeights",
    "TokenCounter",
    "available_counters",
    "base64_image_tokens",
    "best_counter",
    "calibrate_from_events",
    "data_url_image_tokens",
    "event_tokens",
    "image_size",
    "image_tokens",
    "seed_tiktoken_cache",
]
