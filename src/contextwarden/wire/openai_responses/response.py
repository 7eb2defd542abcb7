"""Read an OpenAI Responses response body (``output`` items, ``status`` and ``usage``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import MalformedResponse
from ...log.events import AssistantMessage
from .._response_common import map_stop_reason, mapping, usage_report
from .._types import ParsedResponse
from ..usage import openai_responses_reasoning, openai_responses_usage
from .request import assistant_turn


def parse_openai_responses_response(body: Mapping[str, Any]) -> ParsedResponse:
    """Parse a Responses API response (``output`` items, ``status`` and ``usage``)."""
    output = mapping(body, "response body").get("output")
    if not isinstance(output, list):
        raise MalformedResponse("OpenAI Responses body has no 'output' list")
    message = assistant_turn([mapping(raw, "output[]") for raw in output])
    status = str(body.get("status") or "completed")
    incomplete = body.get("incomplete_details")
    if status == "incomplete" and isinstance(incomplete, Mapping):
        status = str(incomplete.get("reason") or status)
    assistant = AssistantMessage(
        text=message.text,
        thinking=message.thinking,
        tool_calls=message.tool_calls,
        opaque=message.opaque,
        model=str(body.get("model", "")),
        stop_reason=map_stop_reason(status, has_tool_calls=bool(message.tool_calls)),
    )
    usage = body.get("usage")
    if not isinstance(usage, Mapping):
        return assistant, None
    counts = openai_responses_usage(usage)
    return assistant, usage_report(
        body,
        assistant,
        total_input=counts.input,
        output=counts.output,
        cache_read=counts.cache_read,
        reasoning=openai_responses_reasoning(usage),
    )
