"""Read an OpenAI Chat Completions response body (``choices[0].message`` and ``usage``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...events import AssistantMessage, ThinkingBlock, ToolCall
from .._response_common import first_entry, int_field, map_stop_reason, mapping, openai_text, usage_report
from .._types import ParsedResponse
from .request import tool_call


def parse_openai_chat_response(body: Mapping[str, Any]) -> ParsedResponse:
    """Parse a Chat Completions response (``choices[0].message`` and ``usage``)."""
    choice = first_entry(body, "choices")
    message = mapping(choice.get("message"), "choices[0].message")
    text = openai_text(message.get("content"))
    if not text and isinstance(message.get("refusal"), str):
        text = message["refusal"]
    calls = tuple(_chat_call(raw) for raw in message.get("tool_calls") or ())
    # OpenAI-compatible servers (llama.cpp, vLLM, DeepSeek) return reasoning here.
    reasoning = message.get("reasoning_content")
    thinking = (ThinkingBlock(text=reasoning),) if isinstance(reasoning, str) and reasoning else ()
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
    details = usage.get("prompt_tokens_details")
    cached = int_field(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    return assistant, usage_report(
        body,
        assistant,
        total_input=int_field(usage.get("prompt_tokens")),
        output=int_field(usage.get("completion_tokens")),
        cache_read=cached,
    )


def _chat_call(raw: object) -> ToolCall:
    call = mapping(raw, "tool_calls[]")
    mapping(call.get("function"), "tool_calls[].function")
    return tool_call(call)
