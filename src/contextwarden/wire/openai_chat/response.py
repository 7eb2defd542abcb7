"""Read an OpenAI Chat Completions response body (``choices[0].message`` and ``usage``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...context import Message
from ...errors import MalformedResponse
from ...log.events import ToolCall
from .._response_common import assistant_response, first_entry, mapping, openai_text
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
    return assistant_response(
        body,
        Message(role="assistant", text=text, thinking=reasoning_blocks(message), tool_calls=calls),
        model=str(body.get("model", "")),
        reason=str(choice.get("finish_reason") or ""),
        usage=openai_chat_usage(body.get("usage")),
    )


def _chat_call(raw: object, index: int) -> ToolCall:
    call = mapping(raw, f"tool call {index}")
    mapping(call.get("function"), f"tool call {index} function")
    parsed = tool_call(call)
    # Some OpenAI-compatible servers leave the id out; results still need one to refer to.
    return parsed if parsed.id else ToolCall(id=f"call_{index}", name=parsed.name, arguments=parsed.arguments)
