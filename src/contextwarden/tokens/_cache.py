"""Counting events, and remembering the counts so history is never recounted.

An event's text never changes (the log is append-only), so its token count for a given counter
never changes either: :class:`EventTokenCache` keys counts by ``(event id, counter name)`` and a
context estimate only counts the events it has not seen. :class:`CachedCounter` does the same
for repeated texts (system prompts, tool schemas) that are not events.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Final, Generic, TypeVar

from ..log.events import (
    AssistantMessage,
    BinaryPart,
    Compaction,
    Event,
    Instruction,
    Pin,
    Steering,
    ToolResult,
    UserMessage,
)
from ._calibrated import CalibratedCounter
from ._protocol import TokenCounter

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "TOOL_CALL_OVERHEAD",
    "CachedCounter",
    "EventTokenCache",
    "event_tokens",
]

MESSAGE_OVERHEAD: Final = 4
"""Tokens a chat format spends per message on role and delimiters (OpenAI: 3-4)."""

TOOL_CALL_OVERHEAD: Final = 8
"""Tokens per tool call beyond its name and arguments (id, type, delimiters)."""

IMAGE_TOKENS: Final = 1_600
"""The estimate for an image whose pixel size is unknown (a URL, an unreadable header): Anthropic
bills about width·height/750, 1,600 near 1.2 MP; OpenAI's high detail 1024x1024 is 765. Erring high
keeps budgets safe. An image with a readable header is counted by its size (:mod:`._images`)."""

K = TypeVar("K", bound=Hashable)


class _LRU(Generic[K]):
    """A thread-safe least-recently-used map from keys to ints with a maximum number of entries."""

    def __init__(self, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[K, int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> int | None:
        with self._lock:
            value = self._data.get(key)
            if value is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: K, value: int) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0


def _parts_tokens(parts: tuple[BinaryPart, ...]) -> int:
    # Non-image binary parts are sent as base64 text or file references; a third of their size
    # is a deliberately high stand-in.
    return sum(IMAGE_TOKENS if p.media_type.startswith("image/") else len(p.data) // 3 for p in parts)


def _assistant_tokens(event: AssistantMessage, counter: TokenCounter) -> int:
    tokens = counter.count(event.text)
    tokens += sum(counter.count(block.text) for block in event.thinking)
    for call in event.tool_calls:
        arguments = json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))
        tokens += TOOL_CALL_OVERHEAD + counter.count(call.name) + counter.count(arguments)
    return tokens


def event_tokens(event: Event, counter: TokenCounter) -> int:
    """Count the tokens ``event`` adds to a model request, message overhead included.

    Events the model never sees as content (usage reports, setting changes, context-edit batches,
    tool-set changes, fork markers) are 0; a compaction counts as its summary message.
    """
    if isinstance(event, AssistantMessage):
        return MESSAGE_OVERHEAD + _assistant_tokens(event, counter)
    if isinstance(event, ToolResult):
        return MESSAGE_OVERHEAD + counter.count(event.output) + _parts_tokens(event.parts)
    if isinstance(event, UserMessage):
        return MESSAGE_OVERHEAD + counter.count(event.text) + _parts_tokens(event.parts)
    if isinstance(event, (Instruction, Steering, Pin)):
        return MESSAGE_OVERHEAD + counter.count(event.text)
    if isinstance(event, Compaction):
        return MESSAGE_OVERHEAD + counter.count(event.summary)
    return 0


class EventTokenCache:
    """Token counts of events, keyed by ``(event id, counter name)``, bounded by ``maxsize`` entries.

    Pass one cache to every estimate of a session (or share one across sessions: ids are unique)
    so each event is counted once per counter. A :class:`~contextwarden.tokens.CalibratedCounter`
    is served from its base counter's entries times its current factor, so recalibrating never
    invalidates the cache.
    """

    def __init__(self, *, maxsize: int = 100_000) -> None:
        self._lru: _LRU[tuple[str, str]] = _LRU(maxsize)

    def tokens(self, event: Event, counter: TokenCounter) -> int:
        """Tokens of ``event`` under ``counter``, counted at most once while the entry is cached."""
        if isinstance(counter, CalibratedCounter):
            return counter.scale(self.tokens(event, counter.base))
        key = (event.id, counter.name)
        cached = self._lru.get(key)
        if cached is None:
            cached = event_tokens(event, counter)
            self._lru.put(key, cached)
        return cached

    @property
    def hits(self) -> int:
        """Lookups answered from the cache."""
        return self._lru.hits

    @property
    def misses(self) -> int:
        """Lookups that had to count."""
        return self._lru.misses

    def __len__(self) -> int:
        return len(self._lru)

    def clear(self) -> None:
        """Forget every count."""
        self._lru.clear()


class CachedCounter:
    """A counter that remembers the counts of the last ``maxsize`` distinct texts it was given.

    For texts sent on every call that are not events: system prompts, tool schemas, pinned
    fragments. Same ``name`` and ``exact`` as the counter it wraps, since the counts are the same.
    """

    def __init__(self, base: TokenCounter, *, maxsize: int = 4_096) -> None:
        self.base = base
        self._lru: _LRU[str] = _LRU(maxsize)

    @property
    def name(self) -> str:
        """The wrapped counter's name."""
        return self.base.name

    @property
    def exact(self) -> bool:
        """Whether the wrapped counter is exact."""
        return self.base.exact

    @property
    def hits(self) -> int:
        """Counts answered from the cache."""
        return self._lru.hits

    def __repr__(self) -> str:
        return f"CachedCounter({self.base!r}, maxsize={self._lru.maxsize})"

    def count(self, text: str) -> int:
        """Count like the wrapped counter, from the cache when this text was counted before."""
        cached = self._lru.get(text)
        if cached is None:
            cached = self.base.count(text)
            self._lru.put(text, cached)
        return cached
