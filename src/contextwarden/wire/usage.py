"""The one reader of each provider's usage object, shared by the response parsers, the importers and the linter.

Every count is normalised the same way: ``input`` is the total input, cached tokens included
(Anthropic reports uncached input separately; OpenAI and Gemini include cached tokens). Each reader
takes the value as found (``body["usage"]``, a transcript record's ``usage``) and gives ``None`` when
it is not an object.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..log.events import UsageReport


class UsageCounts(NamedTuple):
    """One call's token counts, in the library's convention."""

    input: int
    output: int
    cache_read: int
    cache_write: int = 0
    cache_write_1h: int = 0
    """The part of ``cache_write`` written with the 1-hour lifetime (billed 2x input, not 1.25x)."""
    reasoning: int = 0
    """The part of ``output`` that was reasoning (Responses items sent back within a turn are billed again)."""


def usage_report(
    counts: UsageCounts,
    *,
    request_id: str = "",
    response_event_id: str = "",
    model: str = "",
    created_at: float | None = None,
) -> UsageReport:
    """The log event of one call's counts (``created_at``: when the call was made, else now)."""
    report = UsageReport(
        input_tokens=counts.input,
        output_tokens=counts.output,
        cache_read_tokens=counts.cache_read,
        cache_write_tokens=counts.cache_write,
        cache_write_1h_tokens=counts.cache_write_1h,
        reasoning_tokens=counts.reasoning,
        request_id=request_id,
        response_event_id=response_event_id,
        model=model,
    )
    return report if created_at is None else dataclasses.replace(report, created_at=created_at)


def int_field(value: object) -> int:
    """A token count as found in a body or a foreign record: ints (and integral floats) pass, anything else is 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and value.is_integer():
        return max(int(value), 0)
    return 0


def _nested(usage: Mapping[str, Any], key: str, field: str) -> int:
    details = usage.get(key)
    return int_field(details.get(field)) if isinstance(details, Mapping) else 0


def anthropic_usage(usage: object) -> UsageCounts | None:
    """An Anthropic Messages ``usage``: input is uncached + cache reads + cache writes.

    ``cache_creation`` (when present) splits the writes by lifetime; the 1-hour ones are ``cache_write_1h``.
    """
    if not isinstance(usage, Mapping):
        return None
    read = int_field(usage.get("cache_read_input_tokens"))
    write = int_field(usage.get("cache_creation_input_tokens"))
    total = int_field(usage.get("input_tokens")) + read + write
    one_hour = min(_nested(usage, "cache_creation", "ephemeral_1h_input_tokens"), write)
    return UsageCounts(
        input=total,
        output=int_field(usage.get("output_tokens")),
        cache_read=read,
        cache_write=write,
        cache_write_1h=one_hour,
    )


def openai_chat_usage(usage: object) -> UsageCounts | None:
    """A Chat Completions ``usage``, also as LiteLLM and DeepSeek report it.

    ``prompt_tokens`` already counts cached tokens (``prompt_tokens_details.cached_tokens``, or
    DeepSeek's ``prompt_cache_hit_tokens``). LiteLLM's Anthropic mapping adds Anthropic's
    ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` and has counted them in
    ``prompt_tokens`` in some versions and not in others, so when the parts exceed the reported total
    the parts are added. A record with ``input_tokens`` / ``output_tokens`` instead of the Chat names
    is read the same way.
    """
    if not isinstance(usage, Mapping):
        return None
    prompt = int_field(usage.get("prompt_tokens", usage.get("input_tokens")))
    cached = _nested(usage, "prompt_tokens_details", "cached_tokens") or int_field(usage.get("prompt_cache_hit_tokens"))
    read = max(cached, int_field(usage.get("cache_read_input_tokens")))
    write = int_field(usage.get("cache_creation_input_tokens"))
    total = prompt if prompt >= read + write else prompt + read + write
    output = int_field(usage.get("completion_tokens", usage.get("output_tokens")))
    return UsageCounts(input=total, output=output, cache_read=read, cache_write=write)


def openai_responses_usage(usage: object) -> UsageCounts | None:
    """A Responses API ``usage``, also Codex's ``token_count``.

    Codex names the cached count ``cached_input_tokens`` and the reasoning count ``reasoning_output_tokens``.
    """
    if not isinstance(usage, Mapping):
        return None
    cached = _nested(usage, "input_tokens_details", "cached_tokens") or int_field(usage.get("cached_input_tokens"))
    reasoning = _nested(usage, "output_tokens_details", "reasoning_tokens") or int_field(
        usage.get("reasoning_output_tokens")
    )
    return UsageCounts(
        input=int_field(usage.get("input_tokens")),
        output=int_field(usage.get("output_tokens")),
        cache_read=cached,
        reasoning=reasoning,
    )


def gemini_usage(usage: object) -> UsageCounts | None:
    """A Gemini ``usageMetadata``: thinking is counted apart from the candidates; both are billed as output."""
    if not isinstance(usage, Mapping):
        return None
    return UsageCounts(
        input=int_field(usage.get("promptTokenCount")),
        output=int_field(usage.get("candidatesTokenCount")) + int_field(usage.get("thoughtsTokenCount")),
        cache_read=int_field(usage.get("cachedContentTokenCount")),
    )


def any_usage(usage: object) -> UsageCounts | None:
    """A ``usage`` object of an unnamed format, told apart by its fields (Chat, Anthropic, else Responses)."""
    if not isinstance(usage, Mapping):
        return None
    if "prompt_tokens" in usage:
        return openai_chat_usage(usage)
    if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:
        return anthropic_usage(usage)
    return openai_responses_usage(usage)
