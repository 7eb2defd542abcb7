"""Read an OpenAI Chat Completions response body (``choices[0].message`` and ``usage``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import MalformedResponse
from ...log.events import AssistantMessage, ToolCall
from .._response_common import first_entry, map_stop_reason, mapping, openai_text, usage_report
from .._types import ParsedResponse
from ..usage import openai_chat_usage
from .request import reasoning_blocks, tool_call


def parse_openai_chat_response(body: Mapping[str, Any]) -> ParsedResponse:
    """Parse a Chat Completions response (``choices[0].message`` and ``usage``)."""
    choice = first_entry(body, "choices")
    message = mapping(choice.get("message"), "choices[0].message")
    text = openai_text(message.get("content"))
    if not text and isinstance(message.get("refusal"), str):
        text = message["refusal"]
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise MalformedResponse("choices[0].message.tool_calls is not a list")
    calls = tuple(_chat_call(raw, index) for index, raw in enumerate(raw_calls))
    thinking = reasoning_blocks(message)
    assistant = AssistantMessage(
        text=text,
        thinking=thinking,
        tool_calls=calls,
        model=str(body.get("model", "")),
        stop_reason=map_stop_reason(str(choice.get("finish_reason") or ""), has_tool_calls=bool(calls)),
    )
    usage = body.get("usage")
    if not isinstance(usage, Mapping):
        return assistant, None
    counts = openai_chat_usage(usage)
    return assistant, usage_report(
        body, assistant, total_input=counts.input, output=counts.output, cache_read=counts.cache_read
    )


def _chat_call(raw: object, index: int) -> ToolCall:
    call = mapping(raw, f"tool call {index}")
    mapping(call.get("function"), f"tool call {index} function")
    parsed = tool_call(call)
    # Some OpenAI-compatible servers leave the id out; results still need one to refer to.
    return parsed if parsed.id else ToolCall(id=f"call_{index}", name=parsed.name, arguments=parsed.arguments)
