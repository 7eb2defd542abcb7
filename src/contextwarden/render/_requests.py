"""Recorded request payloads (OpenAI Chat Completions, Anthropic Messages) back into messages.

The linter and the transcript importers read what an agent actually sent through this one function.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..context import Message
from ..errors import ImportFormatError
from ..events import BinaryPart, ThinkingBlock, ToolCall
from ._common import REDACTED_PREFIX, arguments_object, from_b64, from_data_url, parse_arguments

__all__ = ["anthropic_assistant_content", "openai_tool_call", "parse_request_messages"]

_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def parse_request_messages(payload: Mapping[str, Any]) -> tuple[str, list[Message]]:
    """Return ``(system prompt, messages)`` of an OpenAI Chat or Anthropic Messages request payload.

    The format is recognized from the payload (a top-level ``system`` or Anthropic content blocks mean
    Anthropic). Leading system/developer messages form the system prompt (joined by blank lines); later
    ones stay messages. Tool messages get their tool's name from the call they answer. Images sent as
    base64 become parts; images by URL become a ``[image: URL]`` line of text.
    Raises :class:`~contextwarden.errors.ImportFormatError` for a payload without a ``messages`` list.
    """
    messages = payload.get("messages") if isinstance(payload, Mapping) else None
    if not isinstance(messages, list):
        raise ImportFormatError("request payload has no 'messages' list (OpenAI Chat or Anthropic expected)")
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise ImportFormatError(f"messages[{index}] is not an object with a 'role'")
    if _is_anthropic(payload, messages):
        return _anthropic_system(payload.get("system")), _anthropic_messages(messages)
    return _openai_messages(messages)


def _is_anthropic(payload: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]) -> bool:
    if "system" in payload:
        return True
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, Mapping):
                    continue
                if block.get("type") in _ANTHROPIC_BLOCKS or (block.get("type") == "image" and "source" in block):
                    return True
    return False


# --------------------------------------------------------------------------- OpenAI Chat


def _openai_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[str, list[Message]]:
    system: list[str] = []
    out: list[Message] = []
    names: dict[str, str] = {}
    for raw in messages:
        role = raw["role"]
        text, parts = _openai_content(raw.get("content"))
        if role in ("system", "developer"):
            if out:
                out.append(Message(role=role, text=text))
            else:
                system.append(text)
        elif role == "assistant":
            calls = tuple(openai_tool_call(c) for c in raw.get("tool_calls") or () if isinstance(c, Mapping))
            names.update((call.id, call.name) for call in calls)
            reasoning = raw.get("reasoning_content")
            thinking = (ThinkingBlock(text=reasoning),) if isinstance(reasoning, str) and reasoning else ()
            out.append(Message(role="assistant", text=text, thinking=thinking, tool_calls=calls, parts=parts))
        elif role == "tool":
            call_id = str(raw.get("tool_call_id", ""))
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
            out.append(Message(role="user", text=text, parts=parts))
    return "\n\n".join(t for t in system if t), out


def openai_tool_call(raw: Mapping[str, Any]) -> ToolCall:
    """Return the :class:`ToolCall` of one OpenAI Chat ``tool_calls`` entry (arguments parsed)."""
    function = raw.get("function")
    function = function if isinstance(function, Mapping) else {}
    return ToolCall(
        id=str(raw.get("id", "")),
        name=str(function.get("name", "")),
        arguments=parse_arguments(str(function.get("arguments") or "")),
    )


def _openai_content(content: object) -> tuple[str, tuple[BinaryPart, ...]]:
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        return "", ()
    texts: list[str] = []
    parts: list[BinaryPart] = []
    for part in content:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") in ("text", "input_text", "output_text"):
            texts.append(str(part.get("text", "")))
        elif part.get("type") == "image_url":
            image = part.get("image_url")
            url = str(image.get("url", "")) if isinstance(image, Mapping) else str(image or "")
            decoded = from_data_url(url)
            if decoded is None:
                texts.append(f"[image: {url}]")
            else:
                parts.append(decoded)
    return "\n".join(texts), tuple(parts)


# --------------------------------------------------------------------------- Anthropic


def _anthropic_system(system: object) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n\n".join(str(b.get("text", "")) for b in system if isinstance(b, Mapping) and b.get("text"))
    return ""


def _anthropic_messages(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    out: list[Message] = []
    names: dict[str, str] = {}
    for raw in messages:
        content = raw.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            continue
        if raw["role"] == "assistant":
            message = _anthropic_assistant([b for b in blocks if isinstance(b, Mapping)])
            names.update((call.id, call.name) for call in message.tool_calls)
            out.append(message)
        else:
            out.extend(_anthropic_user([b for b in blocks if isinstance(b, Mapping)], names))
    return out


def _anthropic_assistant(blocks: list[Mapping[str, Any]]) -> Message:
    text, thinking, calls = anthropic_assistant_content(blocks)
    return Message(role="assistant", text=text, thinking=thinking, tool_calls=calls)


def anthropic_assistant_content(
    blocks: Sequence[Mapping[str, Any]],
) -> tuple[str, tuple[ThinkingBlock, ...], tuple[ToolCall, ...]]:
    """Return the text, thinking and tool calls of Anthropic assistant content blocks."""
    texts: list[str] = []
    thinking: list[ThinkingBlock] = []
    calls: list[ToolCall] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "thinking":
            thinking.append(
                ThinkingBlock(text=str(block.get("thinking", "")), signature=str(block.get("signature", "")))
            )
        elif kind == "redacted_thinking":
            thinking.append(ThinkingBlock(text="", signature=REDACTED_PREFIX + str(block.get("data", ""))))
        elif kind == "tool_use":
            calls.append(
                ToolCall(
                    id=str(block.get("id", "")),
                    name=str(block.get("name", "")),
                    arguments=arguments_object(block.get("input")),
                )
            )
    return "".join(texts), tuple(thinking), tuple(calls)


def _anthropic_user(blocks: list[Mapping[str, Any]], names: Mapping[str, str]) -> list[Message]:
    out: list[Message] = []
    texts: list[str] = []
    parts: list[BinaryPart] = []
    for block in blocks:
        if block.get("type") != "tool_result":
            _anthropic_content_block(block, texts, parts)
            continue
        if texts or parts:  # text before a result (not valid for Anthropic, but keep the order seen)
            out.append(Message(role="user", text="\n\n".join(texts), parts=tuple(parts)))
            texts, parts = [], []
        out.append(_anthropic_tool_result(block, names))
    if texts or parts:
        out.append(Message(role="user", text="\n\n".join(texts), parts=tuple(parts)))
    return out


def _anthropic_tool_result(block: Mapping[str, Any], names: Mapping[str, str]) -> Message:
    content = block.get("content")
    texts: list[str] = []
    parts: list[BinaryPart] = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for inner in content:
            if isinstance(inner, Mapping):
                _anthropic_content_block(inner, texts, parts)
    call_id = str(block.get("tool_use_id", ""))
    return Message(
        role="tool",
        text="\n\n".join(texts),
        tool_call_id=call_id,
        tool_name=names.get(call_id, ""),
        is_error=block.get("is_error") is True,
        parts=tuple(parts),
        section="tool_output",
    )


def _anthropic_content_block(block: Mapping[str, Any], texts: list[str], parts: list[BinaryPart]) -> None:
    kind = block.get("type")
    if kind == "text":
        if block.get("text"):
            texts.append(str(block["text"]))
        return
    if kind not in ("image", "document"):
        return
    source = block.get("source")
    source = source if isinstance(source, Mapping) else {}
    decoded = None
    if source.get("type") == "base64":
        decoded = from_b64(str(source.get("media_type", "")), str(source.get("data", "")))
    if decoded is not None:
        parts.append(decoded)
    else:
        texts.append(f"[{kind}: {source.get('url', source.get('type', 'unreadable'))}]")
