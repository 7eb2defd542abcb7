"""Read an Anthropic Messages request body (``POST /v1/messages``) into request messages.

- ``system`` (a string or text blocks): one instruction per block.
- ``assistant`` content: ``text`` blocks join into the message text; ``thinking`` and
  ``redacted_thinking`` blocks become :class:`~contextwarden.log.events.ThinkingBlock` (a redacted block's
  data under the ``redacted:`` signature convention); ``tool_use`` blocks become tool calls.
- ``user`` content: each ``tool_result`` block becomes a ``tool`` message (``is_error`` kept, text and
  base64 images of its content), the other blocks one ``user`` message (text joined by blank lines,
  base64 images and documents as parts, remote ones as ``[image: URL]`` text).
- Any other block type (server tool blocks, citations containers, types newer than this code) is kept
  as an :class:`~contextwarden.log.events.OpaquePart` at its position, and only this codec renders it.
  So is a thinking block with fields beyond ``thinking`` and ``signature``: byte-exact replay matters
  more than reading it.

``cache_control`` markers are not content: they are dropped, and the renderer places its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...context import Message
from ...errors import ImportFormatError
from ...log.events import BinaryPart, Instruction, OpaquePart, ThinkingBlock, ToolCall
from .._codec import ToolEntry, function_tool, provider_tool
from .._common import REDACTED_PREFIX, arguments_object, dumps_compact, from_b64
from .._messages import SYSTEM_FIELD
from .._types import RawSpan

__all__ = [
    "AssistantBlock",
    "assistant_block",
    "assistant_content",
    "content_block",
    "parse_messages",
    "parse_system",
    "tool_entries",
]

_THINKING_KEYS = {
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
}
_IGNORED = frozenset({"cache_control"})


def parse_system(system: object, spans: list[RawSpan] | None = None) -> tuple[Instruction, ...]:
    """The instructions of a ``system`` field: a string, or text blocks (one instruction each).

    ``spans``, when given, gets where each instruction came from.
    """
    if isinstance(system, str):
        if system and spans is not None:
            spans.append(RawSpan("system", (system,)))
        return (Instruction(text=system, source=SYSTEM_FIELD),) if system else ()
    if system is None:
        return ()
    if not isinstance(system, list):
        raise ImportFormatError("Anthropic 'system' must be a string or a list of text blocks")
    out: list[Instruction] = []
    for index, block in enumerate(system):
        if isinstance(block, Mapping) and block.get("type", "text") == "text":
            out.append(Instruction(text=str(block.get("text", "")), source=SYSTEM_FIELD))
            if spans is not None:
                spans.append(RawSpan(f"system[{index}]", (block,)))
    return tuple(out)


def tool_entries(tool: Mapping[str, Any]) -> list[ToolEntry]:
    """The definition of one ``tools`` entry; a server tool (with a ``type``) is kept verbatim."""
    if tool.get("type") not in (None, "custom"):
        kept = {k: v for k, v in tool.items() if k not in _IGNORED}
        return [("", tool, provider_tool(tool.get("name", ""), "anthropic", kept))]
    return [("", tool, function_tool(tool, "input_schema"))]


def parse_messages(messages: object, spans: list[RawSpan] | None = None) -> list[Message]:
    """The request messages of a ``messages`` list (raises :class:`ImportFormatError` when it is none).

    ``spans``, when given, gets one :class:`RawSpan` per message: a whole assistant turn, each
    ``tool_result`` block, and each run of other user blocks (``messages[2].content[1:3]``).
    """
    if not isinstance(messages, list):
        raise ImportFormatError("Anthropic request body has no 'messages' list")
    out: list[Message] = []
    names: dict[str, str] = {}
    for index, raw in enumerate(messages):
        if not isinstance(raw, Mapping) or raw.get("role") not in ("user", "assistant", "system"):
            raise ImportFormatError(f"messages[{index}] is not an object with role 'user', 'assistant' or 'system'")
        content = raw.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise ImportFormatError(f"messages[{index}].content must be a string or a list of blocks")
        valid = [b for b in blocks if isinstance(b, Mapping)]
        if raw["role"] == "system":
            # a system message inside the conversation (Claude Code's agent catalog, its reminders): an
            # instruction at its place, whose bytes the proxy forwards as the client sent them
            texts = [str(b.get("text", "")) for b in valid if b.get("type") == "text"]
            out.append(Message(role="system", text="\n\n".join(texts), section="instructions"))
            if spans is not None:
                spans.append(RawSpan(f"messages[{index}]", (raw,)))
        elif raw["role"] == "assistant":
            message = assistant_content(valid)
            names.update((call.id, call.name) for call in message.tool_calls)
            out.append(message)
            if spans is not None:
                spans.append(RawSpan(f"messages[{index}]", (raw,)))
        else:
            out.extend(_user(valid, names, spans, f"messages[{index}]", raw))
    return out


AssistantBlock = str | ThinkingBlock | ToolCall | OpaquePart
"""What one assistant content block is: text, reasoning, a tool call, or an item kept verbatim."""


def assistant_block(block: Mapping[str, Any], position: int) -> AssistantBlock:
    """Read one assistant content block (``position``: its index in the message's content)."""
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str) and _plain(block, {"type", "text"}):
        return str(block["text"])
    if kind == "thinking" and _plain(block, _THINKING_KEYS["thinking"]):
        return ThinkingBlock(text=str(block.get("thinking", "")), signature=str(block.get("signature", "")))
    if kind == "redacted_thinking" and _plain(block, _THINKING_KEYS["redacted_thinking"]):
        return ThinkingBlock(text="", signature=REDACTED_PREFIX + str(block.get("data", "")))
    if kind == "tool_use" and _plain(block, {"type", "id", "name", "input"}):
        return ToolCall(
            id=str(block.get("id", "")), name=str(block.get("name", "")), arguments=arguments_object(block.get("input"))
        )
    return _opaque(block, position)


def assistant_content(blocks: Sequence[Mapping[str, Any]]) -> Message:
    """The assistant message of Anthropic content blocks (a request turn or a response's ``content``)."""
    texts: list[str] = []
    thinking: list[ThinkingBlock] = []
    calls: list[ToolCall] = []
    opaque: list[OpaquePart] = []
    for position, block in enumerate(blocks):
        read = assistant_block(block, position)
        if isinstance(read, str):
            texts.append(read)
        elif isinstance(read, ThinkingBlock):
            thinking.append(read)
        elif isinstance(read, ToolCall):
            calls.append(read)
        else:
            opaque.append(read)
    return Message(
        role="assistant", text="".join(texts), thinking=tuple(thinking), tool_calls=tuple(calls), opaque=tuple(opaque)
    )


def _plain(block: Mapping[str, Any], keys: frozenset[str] | set[str]) -> bool:
    """Whether the block has only fields the renderer writes back (``cache_control`` aside).

    A member set to ``null`` says nothing (a client echoing ``"citations": null`` sent the same text).
    """
    return all(key in keys or key in _IGNORED or block[key] is None for key in block)


def _opaque(block: Mapping[str, Any], position: int) -> OpaquePart:
    kept = {k: v for k, v in block.items() if k not in _IGNORED}
    return OpaquePart(
        format="anthropic", raw_json=dumps_compact(kept), position=position, kind=str(block.get("type", ""))
    )


def _user(
    blocks: list[Mapping[str, Any]],
    names: Mapping[str, str],
    spans: list[RawSpan] | None,
    path: str,
    whole: object,
) -> list[Message]:
    out: list[Message] = []
    texts: list[str] = []
    parts: list[BinaryPart] = []
    opaque: list[OpaquePart] = []
    position = 0
    start = 0  # the first block of the run being collected

    def flush(end: int) -> None:
        if texts or parts or opaque:
            out.append(Message(role="user", text="\n\n".join(texts), parts=tuple(parts), opaque=tuple(opaque)))
            if spans is not None:
                if start == 0 and end == len(blocks):
                    spans.append(RawSpan(path, (whole,)))
                else:
                    spans.append(RawSpan(f"{path}.content[{start}:{end}]", tuple(blocks[start:end])))
        texts.clear()
        parts.clear()
        opaque.clear()

    for index, block in enumerate(blocks):
        if block.get("type") == "tool_result":
            flush(index)  # text before a result is not valid Anthropic, but keep the order seen
            position, start = 0, index + 1
            out.append(_tool_result(block, names))
            if spans is not None:
                spans.append(RawSpan(f"{path}.content[{index}]", (block,)))
        elif not content_block(block, texts, parts):
            opaque.append(_opaque(block, position))
            position += 1
        else:
            position += 1
    flush(len(blocks))
    return out


def _tool_result(block: Mapping[str, Any], names: Mapping[str, str]) -> Message:
    content = block.get("content")
    texts: list[str] = []
    parts: list[BinaryPart] = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for inner in content:
            if isinstance(inner, Mapping) and not content_block(inner, texts, parts):
                texts.append(dumps_compact(dict(inner)))
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


def content_block(block: Mapping[str, Any], texts: list[str], parts: list[BinaryPart]) -> bool:
    """Add a ``text``, ``image`` or ``document`` block; ``False`` for a block of another type."""
    kind = block.get("type")
    if kind == "text" and _plain(block, {"type", "text"}):
        if block.get("text"):
            texts.append(str(block["text"]))
        return True
    if kind not in ("image", "document") or not _plain(block, {"type", "source"}):
        return False
    source = block.get("source")
    source = source if isinstance(source, Mapping) else {}
    decoded = None
    if source.get("type") == "base64":
        decoded = from_b64(str(source.get("media_type", "")), str(source.get("data", "")))
    if decoded is None:
        return False  # a URL or file reference: only Anthropic can resolve it, so keep it as it came
    parts.append(decoded)
    return True
