"""What every response parser shares: one stop-reason vocabulary, one usage shape, typed access.

``UsageReport.input_tokens`` is always the total input, cached tokens included, whatever the provider's
own convention (Anthropic reports uncached input separately; OpenAI and Gemini include cached tokens).
A body that is not the provider's response shape raises :class:`~contextwarden.errors.MalformedResponse`,
naming what was missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import MalformedResponse
from ..log.events import AssistantMessage, UsageReport

_STOP_REASONS = {
    "stop": "end_turn",
    "end_turn": "end_turn",
    "completed": "end_turn",
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "max_output_tokens": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "tool_use": "tool_use",
    "content_filter": "content_filter",
    "safety": "content_filter",
    "recitation": "content_filter",
    "blocklist": "content_filter",
    "prohibited_content": "content_filter",
    "spii": "content_filter",
    "refusal": "content_filter",
}


def map_stop_reason(reason: str, *, has_tool_calls: bool = False) -> str:
    """Map a provider's stop or finish reason to contextwarden's vocabulary.

    Gemini and OpenAI Responses say ``STOP``/``completed`` even when the answer is tool calls, so a
    normal stop with calls is ``tool_use``.
    """
    mapped = _STOP_REASONS.get(reason.lower(), reason.lower())
    if mapped == "end_turn" and has_tool_calls:
        return "tool_use"
    return mapped


def usage_report(
    body: Mapping[str, Any],
    assistant: AssistantMessage,
    *,
    total_input: int,
    output: int,
    cache_read: int,
    cache_write: int = 0,
    reasoning: int = 0,
    request_id: str | None = None,
) -> UsageReport:
    """The usage of one call, linked to the assistant message it produced."""
    return UsageReport(
        input_tokens=total_input,
        output_tokens=output,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
        request_id=str(body.get("id", "")) if request_id is None else request_id,
        response_event_id=assistant.id,
        model=assistant.model,
    )


def openai_text(content: object) -> str:
    """The text of an OpenAI ``content``: a string, or the text parts of a list joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") in ("text", "output_text")
        )
    return ""


def first_entry(body: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """The first object of the list ``body[key]`` (``choices``, ``candidates``)."""
    if not isinstance(body, Mapping):
        raise MalformedResponse(f"response body is {type(body).__name__}, not a JSON object")
    items = body.get(key)
    if not isinstance(items, list) or not items:
        raise MalformedResponse(f"response body has no {key!r} entries")
    return mapping(items[0], f"{key}[0]")


def mapping(value: object, where: str) -> Mapping[str, Any]:
    """``value`` as an object, or a :class:`MalformedResponse` naming ``where``."""
    if not isinstance(value, Mapping):
        raise MalformedResponse(f"{where} is {type(value).__name__}, expected a JSON object")
    return value


def int_field(value: object) -> int:
    """An integer field of a usage object; 0 when absent or not an integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
