"""Read an Anthropic Messages response body (``content`` blocks, ``stop_reason`` and ``usage``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import MalformedResponse
from ...log.events import AssistantMessage
from .._response_common import map_stop_reason, mapping, usage_report
from .._types import ParsedResponse
from ..usage import anthropic_usage
from .request import assistant_content


def parse_anthropic_response(body: Mapping[str, Any]) -> ParsedResponse:
    """Parse a Messages API response (``content`` blocks, ``stop_reason`` and ``usage``)."""
    content = mapping(body, "response body").get("content")
    if not isinstance(content, list):
        raise MalformedResponse("Anthropic body has no 'content' list")
    message = assistant_content([mapping(raw, "content[]") for raw in content])
    assistant = AssistantMessage(
        text=message.text,
        thinking=message.thinking,
        tool_calls=message.tool_calls,
        opaque=message.opaque,
        model=str(body.get("model", "")),
        stop_reason=map_stop_reason(str(body.get("stop_reason") or ""), has_tool_calls=bool(message.tool_calls)),
    )
    usage = body.get("usage")
    if not isinstance(usage, Mapping):
        return assistant, None
    counts = anthropic_usage(usage)
    return assistant, usage_report(
        body,
        assistant,
        total_input=counts.input,
        output=counts.output,
        cache_read=counts.cache_read,
        cache_write=counts.cache_write,
    )
