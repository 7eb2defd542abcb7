"""The one reader of each provider's ``usage`` object, shared by the response parsers and log readers.

Every count is normalised the same way: ``input`` is the total input, cached tokens included
(Anthropic reports uncached input separately; OpenAI includes cached tokens).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple


class UsageCounts(NamedTuple):
    """One call's token counts, in the library's convention."""

    input: int
    output: int
    cache_read: int
    cache_write: int = 0


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _nested(usage: Mapping[str, Any], key: str, field: str) -> int:
    details = usage.get(key)
    return _int(details.get(field)) if isinstance(details, Mapping) else 0


def anthropic_usage(usage: Mapping[str, Any]) -> UsageCounts:
    """An Anthropic Messages ``usage``: input is uncached + cache reads + cache writes."""
    read = _int(usage.get("cache_read_input_tokens"))
    write = _int(usage.get("cache_creation_input_tokens"))
    total = _int(usage.get("input_tokens")) + read + write
    return UsageCounts(input=total, output=_int(usage.get("output_tokens")), cache_read=read, cache_write=write)


def openai_chat_usage(usage: Mapping[str, Any]) -> UsageCounts:
    """A Chat Completions ``usage`` (DeepSeek's ``prompt_cache_hit_tokens`` counts as cached)."""
    cached = _nested(usage, "prompt_tokens_details", "cached_tokens") or _int(usage.get("prompt_cache_hit_tokens"))
    return UsageCounts(
        input=_int(usage.get("prompt_tokens")), output=_int(usage.get("completion_tokens")), cache_read=cached
    )


def openai_responses_usage(usage: Mapping[str, Any]) -> UsageCounts:
    """A Responses API ``usage``."""
    return UsageCounts(
        input=_int(usage.get("input_tokens")),
        output=_int(usage.get("output_tokens")),
        cache_read=_nested(usage, "input_tokens_details", "cached_tokens"),
    )


def openai_responses_reasoning(usage: Mapping[str, Any]) -> int:
    """Of a Responses API ``usage``'s output, the reasoning tokens (billed again as input while re-sent)."""
    return _nested(usage, "output_tokens_details", "reasoning_tokens")
