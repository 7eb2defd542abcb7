"""Request messages and events, both ways: the step every codec's parser ends with, and its inverse.

A codec reads a body into provider-neutral :class:`~contextwarden.context.Message` objects (the shape
renderers take), then :func:`events_of` turns them into log events. :func:`context_of` goes back, with
no reduction, so ``render_request(parse_request(body).to_context())`` re-sends the same request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..context import Message, ModelContext, ToolDefinition
from ..errors import ImportFormatError
from ..events import AssistantMessage, Event, Instruction, ToolResult, UserMessage

if TYPE_CHECKING:
    from ._types import ParsedRequest, RawSpan, WireFormat

SYSTEM_FIELD = "system field"
"""``Instruction.source`` of text from a body's own system field (Anthropic ``system``, Responses
``instructions``, Gemini ``systemInstruction``); system and developer *messages* say ``message``."""


def events_of(messages: Sequence[Message]) -> tuple[Event, ...]:
    """The log events of parsed request messages, in order."""
    events: list[Event] = []
    for message in messages:
        if message.role in ("system", "developer"):
            role: Literal["system", "developer"] = "developer" if message.role == "developer" else "system"
            events.append(Instruction(text=message.text, role=role, source="message"))
        elif message.role == "user":
            events.append(UserMessage(text=message.text, parts=message.parts, opaque=message.opaque))
        elif message.role == "assistant":
            events.append(
                AssistantMessage(
                    text=message.text,
                    thinking=message.thinking,
                    tool_calls=message.tool_calls,
                    opaque=message.opaque,
                )
            )
        else:
            events.append(
                ToolResult(
                    call_id=message.tool_call_id,
                    tool_name=message.tool_name,
                    output=message.text,
                    is_error=message.is_error,
                    parts=message.parts,
                )
            )
    return tuple(events)


def split_instructions(events: Sequence[Event]) -> tuple[tuple[Instruction, ...], tuple[Event, ...]]:
    """The leading instructions (the system prompt) and the conversation after them."""
    count = 0
    while count < len(events) and isinstance(events[count], Instruction):
        count += 1
    leading = tuple(e for e in events[:count] if isinstance(e, Instruction))
    return leading, tuple(events[count:])


def message_of(event: Event) -> Message | None:
    """The request message an event stands for (``None`` for events that are no message)."""
    if isinstance(event, Instruction):
        return Message(role=event.role, text=event.text, section="instructions", source_ids=(event.id,))
    if isinstance(event, UserMessage):
        return Message(role="user", text=event.text, parts=event.parts, opaque=event.opaque, source_ids=(event.id,))
    if isinstance(event, AssistantMessage):
        return Message(
            role="assistant",
            text=event.text,
            thinking=event.thinking,
            tool_calls=event.tool_calls,
            opaque=event.opaque,
            source_ids=(event.id,),
        )
    if isinstance(event, ToolResult):
        return Message(
            role="tool",
            text=event.output,
            tool_call_id=event.call_id,
            tool_name=event.tool_name,
            is_error=event.is_error,
            parts=event.parts,
            section="tool_output",
            source_ids=(event.id,),
        )
    return None


def context_of(parsed: ParsedRequest) -> ModelContext:
    """The :class:`ModelContext` that renders back to the parsed request (see :meth:`ParsedRequest.to_context`)."""
    system = ""
    leading = list(parsed.instructions)
    if leading and leading[0].source == SYSTEM_FIELD:
        system = leading.pop(0).text
    messages = [m for m in map(message_of, (*leading, *parsed.events)) if m is not None]
    return ModelContext(model=parsed.model, system=system, messages=tuple(messages), tools=parsed.tools)


def parsed_request(
    fmt: WireFormat,
    body: Mapping[str, Any],
    *,
    system: tuple[Instruction, ...],
    messages: Sequence[Message],
    tools: tuple[ToolDefinition, ...],
    own_fields: frozenset[str],
    max_tokens: object = None,
    spans: Sequence[RawSpan] = (),
    tool_spans: Sequence[RawSpan] = (),
) -> ParsedRequest:
    """Assemble a :class:`ParsedRequest` from what a codec read.

    The system field's instructions, then the leading system messages, form ``instructions``; fields
    not in ``own_fields`` go to ``extra`` verbatim. ``spans`` (one per system instruction, then one
    per message) and ``tool_spans`` (one per tool) say where each came from.
    """
    from ._types import ParsedRequest

    leading, rest = split_instructions(events_of(messages))
    limit = max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) else None
    return ParsedRequest(
        format=fmt,
        model=str(body.get("model", "")),
        instructions=(*system, *leading),
        events=rest,
        tools=tools,
        max_tokens=limit,
        extra={k: v for k, v in body.items() if k not in own_fields},
        spans=_aligned(spans, len(system) + len(messages), "items"),
        tool_spans=_aligned(tool_spans, len(tools), "tools"),
    )


def _aligned(spans: Sequence[RawSpan], count: int, what: str) -> tuple[RawSpan, ...]:
    # A codec that records spans records one per item; anything else is a bug in that codec.
    if len(spans) != count:
        raise AssertionError(f"codec recorded {len(spans)} spans for {count} {what}")
    return tuple(spans)


def request_body(body: object) -> Mapping[str, Any]:
    """``body`` as an object, or an :class:`~contextwarden.errors.ImportFormatError`."""
    if not isinstance(body, Mapping):
        raise ImportFormatError(f"request body is {type(body).__name__}, not a JSON object")
    return body
