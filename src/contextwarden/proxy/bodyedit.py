"""Minimal edits to a client's own request body, serialized the way the client serialized it.

The proxy never renders a fresh body when it only changes a few blocks: it replaces the content of
the tool results the projection changed (masked, superseded, truncated) inside the client's parsed
body, keeping the system prompt, the tools, thinking signatures, encrypted items, unknown fields
and key order, then serializes in the client's own JSON style. A body whose style cannot be
reproduced exactly is not edited (the caller forwards the original bytes).

The tool-result addressing (by call id, per wire format) belongs next to the codecs in
``contextwarden.wire`` and can move there as is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

Serializer = Callable[[Any], bytes]

_STYLES: tuple[dict[str, Any], ...] = (
    {"separators": (",", ":"), "ensure_ascii": False},  # Claude Code, the Anthropic and OpenAI SDKs
    {"separators": (",", ":"), "ensure_ascii": True},
    {"separators": (", ", ": "), "ensure_ascii": False},
    {"separators": (", ", ": "), "ensure_ascii": True},  # Python's json.dumps defaults
)


def _serializer(options: dict[str, Any]) -> Serializer:
    def dump(value: Any) -> bytes:
        return json.dumps(value, **options).encode("utf-8", "surrogatepass")

    return dump


compact = _serializer(_STYLES[0])
"""Compact JSON, as the SDKs and Claude Code send it: for bodies the proxy renders itself."""


def client_style(raw: bytes, body: Any) -> Serializer | None:
    """The serializer that reproduces ``raw`` from its parsed ``body`` exactly, or ``None``."""
    for options in _STYLES:
        dump = _serializer(options)
        if dump(body) == raw:
            return dump
    return None


def replace_tool_outputs(fmt: str, body: dict[str, Any], replacements: Mapping[str, str]) -> int:
    """Replace, in place, the content of each tool result whose call id is in ``replacements``.

    Returns how many results were replaced. Everything else in the body is left as it was.
    """
    done = 0
    if fmt == "anthropic":
        for message in _list(body.get("messages")):
            for block in _list(message.get("content") if isinstance(message, dict) else None):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    text = replacements.get(str(block.get("tool_use_id", "")))
                    if text is not None:
                        block["content"] = text
                        done += 1
    elif fmt == "openai_chat":
        for message in _list(body.get("messages")):
            if isinstance(message, dict) and message.get("role") == "tool":
                text = replacements.get(str(message.get("tool_call_id", "")))
                if text is not None:
                    message["content"] = text
                    done += 1
    elif fmt == "openai_responses":
        for item in _list(body.get("input")):
            if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output"):
                text = replacements.get(str(item.get("call_id", "")))
                if text is not None:
                    item["output"] = text
                    done += 1
    return done


MAX_BREAKPOINTS = 4
"""Anthropic accepts at most four ``cache_control`` breakpoints in one request."""


def count_breakpoints(body: Mapping[str, Any]) -> int:
    """How many ``cache_control`` marks an Anthropic body carries (tools, system and messages)."""
    found = 0
    system = body.get("system")
    for part in [*_list(body.get("tools")), *_list(system)]:
        found += isinstance(part, dict) and bool(part.get("cache_control"))
    for message in _list(body.get("messages")):
        for block in _list(message.get("content") if isinstance(message, dict) else None):
            found += isinstance(block, dict) and bool(block.get("cache_control"))
    return found


def mark_tail(body: dict[str, Any], *, ttl: str = "5m") -> bool:
    """Put a breakpoint on the last content block of an Anthropic body, if one is free there.

    The client's own breakpoints are kept and counted; nothing is added once four are in use or
    when the last block already carries one. Returns whether a breakpoint was added.
    """
    messages = _list(body.get("messages"))
    if not messages or count_breakpoints(body) >= MAX_BREAKPOINTS or not isinstance(messages[-1], dict):
        return False
    last = messages[-1]
    content = last.get("content")
    if isinstance(content, str):
        if not content:
            return False
        content = last["content"] = [{"type": "text", "text": content}]
    blocks = _list(content)
    if not blocks or not isinstance(blocks[-1], dict) or blocks[-1].get("cache_control"):
        return False
    if blocks[-1].get("type") in ("thinking", "redacted_thinking"):
        return False  # Anthropic refuses cache_control on thinking blocks
    blocks[-1]["cache_control"] = {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}
    return True


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
