"""Read an OpenAI Responses request body (``POST /v1/responses``) into request messages.

- ``instructions`` is the system prompt; ``input`` is a string (one user message) or a list of items.
- ``message`` items (or bare ``{"role", "content"}``): ``system``/``developer`` become instructions,
  ``user`` user messages (``input_text`` joined, ``input_image`` data URLs as parts), ``assistant``
  text of the assistant turn.
- The items between two user-side items form one assistant turn: its ``message`` text (output text
  parts joined; item ids, status and annotations are not kept), its ``function_call`` items as tool
  calls (their item id and status are not kept either: the API does not need them on input), and
  every other item (``reasoning`` with its
  ``encrypted_content``, ``compaction``, built-in tool calls, types newer than this code) kept as an
  :class:`~contextwarden.log.events.OpaquePart` at its position in the turn. A ``reasoning`` item also
  gives a :class:`~contextwarden.log.events.ThinkingBlock` with its summary text, unsigned (so only the
  opaque item is ever sent back, and only to Responses).
- ``function_call_output`` items become ``tool`` messages. A ``function_call`` of a tool in a
  ``namespace`` (tools a client loads with ``tool_search``, Codex's MCP tools) is named
  ``<namespace>.<name>`` (a function name has no dot). A client's ``tool_search_output`` is a
  message of its own (:func:`search_output`).

The same turn reader reads a response's ``output`` list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...context import Message
from ...errors import ImportFormatError
from ...log.events import BinaryPart, Instruction, OpaquePart, ThinkingBlock, ToolCall
from .._codec import ToolEntry, function_tool, provider_tool
from .._common import dumps_compact, from_data_url, parse_arguments
from .._messages import SYSTEM_FIELD
from .._types import RawSpan

__all__ = ["assistant_turn", "is_user_side", "parse_input", "parse_instructions", "search_output", "tool_entries"]

_FORMAT = "openai_responses"
_USER_SIDE = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})


def parse_instructions(instructions: object, spans: list[RawSpan] | None = None) -> tuple[Instruction, ...]:
    """The system prompt of an ``instructions`` field (``spans``: where it came from)."""
    if isinstance(instructions, str) and instructions:
        if spans is not None:
            spans.append(RawSpan("instructions", (instructions,)))
        return (Instruction(text=instructions, source=SYSTEM_FIELD),)
    return ()


def tool_entries(tool: Mapping[str, Any]) -> list[ToolEntry]:
    """The definition of one ``tools`` entry: a function tool, or a built-in one (``web_search``...) verbatim."""
    if tool.get("type") == "function" and set(tool) <= {"type", "name", "description", "parameters", "strict"}:
        return [("", tool, function_tool(tool))]
    return [("", tool, provider_tool(tool.get("name", tool.get("type", "")), _FORMAT, tool))]


def parse_input(items: object, spans: list[RawSpan] | None = None) -> list[Message]:
    """The request messages of an ``input`` field (a string or a list of items).

    ``spans``, when given, gets one :class:`RawSpan` per message: the input item it was read from, or
    for an assistant turn the run of items that form it (``input[4:7]``).
    """
    if isinstance(items, str):
        if spans is not None:
            spans.append(RawSpan("input", (items,)))
        return [Message(role="user", text=items)]
    if not isinstance(items, list):
        raise ImportFormatError("OpenAI Responses request body has no 'input' string or list")
    out: list[Message] = []
    turn: list[Mapping[str, Any]] = []
    names: dict[str, str] = {}

    def flush(end: int) -> None:
        if turn:
            message = assistant_turn(turn)
            names.update((call.id, call.name) for call in message.tool_calls)
            out.append(message)
            if spans is not None:
                start = end - len(turn)
                path = f"input[{start}]" if len(turn) == 1 else f"input[{start}:{end}]"
                spans.append(RawSpan(path, tuple(turn)))
            turn.clear()

    for index, raw in enumerate(items):
        if not isinstance(raw, Mapping):
            raise ImportFormatError(f"input[{index}] is not an object")
        kind = raw.get("type", "message" if "role" in raw else None)
        if is_user_side(raw):
            flush(index)
            if spans is not None:
                spans.append(RawSpan(f"input[{index}]", (raw,)))
            if kind == "tool_search_output":
                out.append(search_output(raw))
            else:
                out.append(_message(raw) if kind == "message" else _tool_output(raw, names))
        else:
            turn.append(raw)
    flush(len(items))
    return out


def is_user_side(item: Mapping[str, Any]) -> bool:
    """Whether an input item is a message of its own (user, system, developer, a tool's output).

    Every other item belongs to the assistant turn that the items between two such items form.
    """
    kind = item.get("type", "message" if "role" in item else None)
    return (kind == "message" and item.get("role") != "assistant") or kind in _USER_SIDE


def _tool_output(item: Mapping[str, Any], names: Mapping[str, str]) -> Message:
    call_id = str(item.get("call_id", ""))
    text, parts = _content(item.get("output"))
    return Message(
        role="tool",
        text=text,
        tool_call_id=call_id,
        tool_name=names.get(call_id, ""),
        parts=parts,
        section="tool_output",
    )


def assistant_turn(items: Sequence[Mapping[str, Any]]) -> Message:
    """The assistant message of a run of output items (a request's assistant turn or a response's ``output``)."""
    texts: list[str] = []
    thinking: list[ThinkingBlock] = []
    calls: list[ToolCall] = []
    opaque: list[OpaquePart] = []
    for position, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "message":
            texts.append(_assistant_text(item.get("content")))
        elif kind == "function_call":
            namespace = item.get("namespace")
            name = str(item.get("name", ""))
            calls.append(
                ToolCall(
                    id=str(item.get("call_id", "")),
                    name=f"{namespace}.{name}" if isinstance(namespace, str) and namespace else name,
                    arguments=parse_arguments(str(item.get("arguments") or "")),
                )
            )
        elif kind == "custom_tool_call" and isinstance(item.get("input"), str):
            # a freeform tool (Codex's apply_patch): its text is the one argument
            calls.append(
                ToolCall(
                    id=str(item.get("call_id", "")), name=str(item.get("name", "")), arguments={"input": item["input"]}
                )
            )
        else:
            if kind == "reasoning":
                thinking.append(ThinkingBlock(text=_reasoning_text(item)))
            opaque.append(_opaque(item, position))
    return Message(
        role="assistant", text="".join(texts), thinking=tuple(thinking), tool_calls=tuple(calls), opaque=tuple(opaque)
    )


def search_output(item: Mapping[str, Any]) -> Message:
    """A client's ``tool_search_output`` (the tools its search loaded): a message of its own, kept whole.

    It answers the assistant turn's ``tool_search_call`` the way a tool output answers a call, and must
    go back as it came (the tools it loaded are callable only while it is there), so it is neither a
    tool result the window may reduce nor part of the turn before it.
    """
    return Message(role="user", text="", opaque=(_opaque(item, 0),))


def _opaque(item: Mapping[str, Any], position: int) -> OpaquePart:
    return OpaquePart(
        format=_FORMAT, raw_json=dumps_compact(dict(item)), position=position, kind=str(item.get("type", "message"))
    )


def _assistant_text(content: object) -> str:
    if isinstance(content, str):
        return content
    return (
        "".join(str(part.get("text", part.get("refusal", ""))) for part in content if isinstance(part, Mapping))
        if isinstance(content, list)
        else ""
    )


def _reasoning_text(item: Mapping[str, Any]) -> str:
    pieces = [str(s.get("text", "")) for s in item.get("summary") or () if isinstance(s, Mapping)]
    if not pieces:  # open-weight models return the raw reasoning as content instead of a summary
        pieces = [str(c.get("text", "")) for c in item.get("content") or () if isinstance(c, Mapping)]
    return "\n\n".join(p for p in pieces if p)


def _message(item: Mapping[str, Any]) -> Message:
    role = str(item.get("role", "user"))
    text, parts = _content(item.get("content"))
    if role in ("system", "developer"):
        return Message(role="developer" if role == "developer" else "system", text=text, section="instructions")
    content = item.get("content")
    opaque = tuple(
        OpaquePart(
            format=_FORMAT, raw_json=dumps_compact(dict(part)), position=position, kind=str(part.get("type", ""))
        )
        for position, part in enumerate(content if isinstance(content, list) else ())
        if isinstance(part, Mapping) and not _readable_part(part)
    )
    return Message(role="user", text=text, parts=parts, opaque=opaque)


def _readable_part(part: Mapping[str, Any]) -> bool:
    """A content part read into text or a binary part (the rest is kept opaque)."""
    if part.get("type") in ("input_text", "output_text") and set(part) <= {"type", "text"}:
        return True
    return part.get("type") == "input_image" and from_data_url(str(part.get("image_url", ""))) is not None


def _content(content: object) -> tuple[str, tuple[BinaryPart, ...]]:
    """Text and data-URL images of a ``content`` or ``output`` (a string or a list of parts)."""
    if isinstance(content, str):
        return content, ()
    texts: list[str] = []
    parts: list[BinaryPart] = []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, Mapping) or not _readable_part(part):
            continue  # kept opaque on a user message (see _message); in a tool output, not read
        if part.get("type") == "input_image":
            decoded = from_data_url(str(part.get("image_url", "")))
            if decoded is not None:
                parts.append(decoded)
        else:
            texts.append(str(part.get("text", "")))
    return "\n".join(texts), tuple(parts)
