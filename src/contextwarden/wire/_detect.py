"""Which wire format a request body is in, from its shape alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._types import WireFormat

_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def detect_format(body: Mapping[str, Any]) -> WireFormat | None:
    """The format of a request body, or ``None`` when it is no request this package reads.

    ``contents`` means Gemini; ``input`` (without ``messages``) OpenAI Responses; ``messages`` with a
    top-level ``system``, ``anthropic_version``, tools with an ``input_schema`` or Anthropic content
    blocks means Anthropic; other ``messages`` bodies are OpenAI Chat.
    """
    if not isinstance(body, Mapping):
        return None
    messages = body.get("messages")
    if not isinstance(messages, list):
        if isinstance(body.get("contents"), list):
            return "gemini"
        if isinstance(body.get("input"), (str, list)):
            return "openai_responses"
        return None
    if "system" in body or "anthropic_version" in body:
        return "anthropic"
    tools = body.get("tools")
    if isinstance(tools, list) and any(isinstance(t, Mapping) and "input_schema" in t for t in tools):
        return "anthropic"
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and (b.get("type") in _ANTHROPIC_BLOCKS or "source" in b) for b in content
        ):
            return "anthropic"
    return "openai_chat"
