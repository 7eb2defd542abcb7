"""Read an OpenAI Chat Completions request body (``POST /v1/chat/completions``) into request messages.

- ``system``/``developer`` messages become instructions (the leading ones are the system prompt).
- ``user`` content: a string, or parts (``text`` joined by newlines, ``image_url`` data URLs as parts,
  remote images as ``[image: URL]`` text); other part types (``input_audio``, ``file``) are kept as
  :class:`~contextwarden.log.events.OpaquePart` at their position.
- ``assistant``: text (a string or text parts; a ``refusal`` when there is no text), ``tool_calls``
  (arguments parsed), and ``reasoning_content`` (what OpenAI-compatible servers return) as unsigned
  thinking (``reasoning`` too, as OpenRouter and vLLM call it).
- ``tool`` messages answer ``tool_call_id``; their tool name is the call's.
- The deprecated ``function_call`` of an assistant message becomes a tool call with the made-up id
  ``function-call-<n>``, and a ``function`` message answers the latest such call of its name (both
  are rendered back as ``tool_calls`` and ``tool`` messages).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...context import Message
from ...errors import ImportFormatError
from ...log.events import BinaryPart, OpaquePart, ThinkingBlock, ToolCall
from .._codec import ToolEntry, function_tool, provider_tool
from .._common import dumps_compact, from_data_url, parse_arguments
from .._types import RawSpan

__all__ = ["message_content", "parse_messages", "reasoning_blocks", "tool_call", "tool_entries"]

_FORMAT = "openai_chat"


def tool_entries(tool: Mapping[str, Any]) -> list[ToolEntry]:
    """The definition of one ``tools`` entry: a function tool, or any other tool type kept verbatim."""
    function = tool.get("function")
    if tool.get("type") == "function" and isinstance(function, Mapping) and set(tool) == {"type", "function"}:
        return [("", tool, function_tool(function))]
    return [("", tool, provider_tool(tool.get("type", ""), _FORMAT, tool))]


def parse_messages(messages: object, spans: list[RawSpan] | None = None) -> list[Message]:
    """The request messages of a ``messages`` list (raises :class:`ImportFormatError` when it is none).

    ``spans``, when given, gets one :class:`RawSpan` per message: each message is one item.
    """
    if not isinstance(messages, list):
        raise ImportFormatError("OpenAI Chat request body has no 'messages' list")
    out: list[Message] = []
    names: dict[str, str] = {}
    legacy_calls: dict[str, str] = {}
    legacy_count = 0
    for index, raw in enumerate(messages):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("role"), str):
            raise ImportFormatError(f"messages[{index}] is not an object with a 'role'")
        role = raw["role"]
        if spans is not None:
            spans.append(RawSpan(f"messages[{index}]", (raw,)))
        text, parts, opaque = message_content(raw.get("content"))
        if role in ("system", "developer"):
            out.append(Message(role=role, text=text, section="instructions"))
        elif role == "assistant":
            calls = tuple(tool_call(c) for c in raw.get("tool_calls") or () if isinstance(c, Mapping))
            legacy = raw.get("function_call")
            if isinstance(legacy, Mapping):  # the deprecated single call: it has no id, so one is made
                legacy_count += 1
                legacy_id = f"function-call-{legacy_count}"
                call = tool_call({"id": legacy_id, "function": legacy})
                legacy_calls[call.name] = legacy_id
                calls = (*calls, call)
            names.update((call.id, call.name) for call in calls)
            if not text and isinstance(raw.get("refusal"), str):
                text = raw["refusal"]
            thinking = reasoning_blocks(raw)
            out.append(Message(role="assistant", text=text, thinking=thinking, tool_calls=calls, parts=parts))
        elif role in ("tool", "function"):
            # A legacy ``function`` message answers the latest function_call of its name.
            name = str(raw.get("name", ""))
            call_id = legacy_calls.pop(name, "") if role == "function" else str(raw.get("tool_call_id", ""))
            out.append(
                Message(
                    role="tool",
                    text=text,
                    tool_call_id=call_id,
                    tool_name=names.get(call_id, str(raw.get("name", ""))),
                    parts=parts,
                    section="tool_output",
                )
            )
        else:
            out.append(Message(role="user", text=text, parts=parts, opaque=opaque))
    return out


def reasoning_blocks(message: Mapping[str, Any]) -> tuple[ThinkingBlock, ...]:
    """Reasoning text OpenAI-compatible servers add to a message, as an unsigned thinking block.

    DeepSeek and llama.cpp call it ``reasoning_content``; OpenRouter and vLLM ``reasoning``.
    """
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return (ThinkingBlock(text=value),)
    return ()


def tool_call(raw: Mapping[str, Any]) -> ToolCall:
    """The :class:`ToolCall` of one ``tool_calls`` entry (arguments parsed)."""
    function = raw.get("function")
    function = function if isinstance(function, Mapping) else {}
    return ToolCall(
        id=str(raw.get("id", "")),
        name=str(function.get("name", "")),
        arguments=parse_arguments(str(function.get("arguments") or "")),
    )


def message_content(content: object) -> tuple[str, tuple[BinaryPart, ...], tuple[OpaquePart, ...]]:
    """Text, data-URL images and other parts (kept opaque) of a message's ``content``: a string or parts."""
    if isinstance(content, str):
        return content, (), ()
    texts: list[str] = []
    parts: list[BinaryPart] = []
    opaque: list[OpaquePart] = []
    for position, part in enumerate(content if isinstance(content, list) else ()):
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            texts.append(str(part.get("text", "")))
        elif kind == "image_url":
            image = part.get("image_url")
            url = str(image.get("url", "")) if isinstance(image, Mapping) else str(image or "")
            decoded = from_data_url(url)
            if decoded is None:
                texts.append(f"[image: {url}]")
            else:
                parts.append(decoded)
        else:
            opaque.append(
                OpaquePart(format=_FORMAT, raw_json=dumps_compact(dict(part)), position=position, kind=str(kind or ""))
            )
    return "\n".join(texts), tuple(parts), tuple(opaque)
