"""Request messages and events, both ways: the step every codec's parser ends with, and its inverse.

A codec reads a body into provider-neutral :class:`~contextwarden.context.Message` objects (the shape
renderers take), then :func:`events_of` turns them into log events. :func:`context_of` goes back, with
no reduction, so ``render_request(parse_request(body).to_context())`` re-sends the same request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ..context import Message, ModelContext, ToolDefinition, tool_message
from ..errors import ImportFormatError
from ..log.events import AssistantMessage, Event, Instruction, ToolResult, UserMessage

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
        return tool_message(event)
    return None


def context_of(
    model: str, instructions: Sequence[Instruction], events: Sequence[Event], tools: tuple[ToolDefinition, ...]
) -> ModelContext:
    """The :class:`ModelContext` of a parsed request's parts (see ``ParsedRequest.to_context``)."""
    system = ""
    leading = list(instructions)
    if leading and leading[0].source == SYSTEM_FIELD:
        system = leading.pop(0).text
    messages = [m for m in map(message_of, (*leading, *events)) if m is not None]
    return ModelContext(model=model, system=system, messages=tuple(messages), tools=tools)


def request_body(body: object) -> Mapping[str, Any]:
    """``body`` as an object, or an :class:`~contextwarden.errors.ImportFormatError`."""
    if not isinstance(body, Mapping):
        raise ImportFormatError(f"request body is {type(body).__name__}, not a JSON object")
    return body
