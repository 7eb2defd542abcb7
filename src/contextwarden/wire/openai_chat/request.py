"""Read an OpenAI Chat Completions request body (``POST /v1/chat/completions``) into request messages.

- ``system``/``developer`` messages become instructions (the leading ones are the system prompt).
- ``user`` content: a string, or parts (``text`` joined by newlines, ``image_url`` data URLs as parts,
  remote images as ``[image: URL]`` text); other part types (``input_audio``, ``file``) are kept as
  :class:`~contextwarden.events.OpaquePart` at their position.
- ``assistant``: text (a string or text parts; a ``refusal`` when there is no text), ``tool_calls``
  (arguments parsed), and ``reasoning_content`` (what OpenAI-compatible servers return) as unsigned
  thinking.
- ``tool`` messages answer ``tool_call_id``; their tool name is the call's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...context import Message, ToolDefinition
from ...errors import ImportFormatError
from ...events import BinaryPart, OpaquePart, ThinkingBlock, ToolCall
from .._common import dumps_compact, from_data_url, parse_arguments

__all__ = ["parse_messages", "parse_tools", "tool_call"]

_FORMAT = "openai_chat"


def parse_tools(tools: object) -> tuple[ToolDefinition, ...]:
    """Function tools as definitions; any other tool type kept verbatim."""
    out: list[ToolDefinition] = []
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, Mapping):
            continue
        function = tool.get("function")
        if tool.get("type") == "function" and isinstance(function, Mapping) and set(tool) == {"type", "function"}:
            schema = function.get("parameters")
            out.append(
                ToolDefinition(
                    name=str(function.get("name", "")),
                    description=str(function.get("description", "")),
                    parameters=dict(schema) if isinstance(schema, Mapping) else {},
                )
            )
        else:
            out.append(
                ToolDefinition(
                    name=str(tool.get("type", "")), description="", format=_FORMAT, raw_json=dumps_compact(dict(tool))
                )
            )
    return tuple(out)


def parse_messages(messages: object) -> list[Message]:
    """The request messages of a ``messages`` list (raises :class:`ImportFormatError` when it is none)."""
    if not isinstance(messages, list):
        raise ImportFormatError("OpenAI Chat request body has no 'messages' list")
    out: list[Message] = []
    names: dict[str, str] = {}
    for index, raw in enumerate(messages):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("role"), str):
            raise ImportFormatError(f"messages[{index}] is not an object with a 'role'")
        role = raw["role"]
        text, parts, opaque = _content(raw.get("content"))
        if role in ("system", "developer"):
            out.append(Message(role=role, text=text, section="instructions"))
        elif role == "assistant":
            calls = tuple(tool_call(c) for c in raw.get("tool_calls") or () if isinstance(c, Mapping))
            names.update((call.id, call.name) for call in calls)
            if not text and isinstance(raw.get("refusal"), str):
                text = raw["refusal"]
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
            out.append(Message(role="user", text=text, parts=parts, opaque=opaque))
    return out


def tool_call(raw: Mapping[str, Any]) -> ToolCall:
    """The :class:`ToolCall` of one ``tool_calls`` entry (arguments parsed)."""
    function = raw.get("function")
    function = function if isinstance(function, Mapping) else {}
    return ToolCall(
        id=str(raw.get("id", "")),
        name=str(function.get("name", "")),
        arguments=parse_arguments(str(function.get("arguments") or "")),
    )


def _content(content: object) -> tuple[str, tuple[BinaryPart, ...], tuple[OpaquePart, ...]]:
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
