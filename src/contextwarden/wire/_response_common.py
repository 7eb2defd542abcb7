"""What every response parser shares: one stop-reason vocabulary, one usage shape, typed access.

``UsageReport.input_tokens`` is always the total input, cached tokens included, whatever the provider's
own convention (Anthropic reports uncached input separately; OpenAI and Gemini include cached tokens).
A body that is not the provider's response shape raises :class:`~contextwarden.errors.MalformedResponse`,
naming what was missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..context import Message
from ..errors import MalformedResponse
from ..log.events import AssistantMessage
from ._types import ParsedResponse
from .usage import UsageCounts, usage_report

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


def assistant_response(
    body: Mapping[str, Any],
    message: Message,
    *,
    model: str,
    reason: str,
    usage: UsageCounts | None,
    request_id: str | None = None,
) -> ParsedResponse:
    """The events of one response: the assistant message read from it and its usage, linked to it.

    ``reason`` is the provider's own stop or finish reason; ``request_id`` defaults to the body's ``id``.
    """
    assistant = AssistantMessage(
        text=message.text,
        thinking=message.thinking,
        tool_calls=message.tool_calls,
        opaque=message.opaque,
        model=model,
        stop_reason=map_stop_reason(reason, has_tool_calls=bool(message.tool_calls)),
    )
    if usage is None:
        return assistant, None
    request = str(body.get("id", "")) if request_id is None else request_id
    return assistant, usage_report(usage, request_id=request, response_event_id=assistant.id, model=model)


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
