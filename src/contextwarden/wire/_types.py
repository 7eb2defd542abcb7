"""The shapes every codec shares: the format names, a parsed request, the stream protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..context import Message, ModelContext, ToolDefinition
from ..log.events import AssistantMessage, Event, Instruction, UsageReport
from ._messages import context_of, events_of, split_instructions

WireFormat = Literal["anthropic", "openai_chat", "openai_responses", "gemini"]
"""A provider wire format: Anthropic Messages, OpenAI Chat Completions, OpenAI Responses, Gemini."""

FORMATS: tuple[WireFormat, ...] = ("anthropic", "openai_chat", "openai_responses", "gemini")
"""Every wire format, in a stable order."""

ParsedResponse = tuple[AssistantMessage, UsageReport | None]
"""A model response as events: the assistant message and, when the body reports it, its usage."""


@dataclass(frozen=True, slots=True)
class RawSpan:
    """Where one parsed item came from in the body: its path and the JSON values it was read from.

    Consumers that compare requests byte for byte (the linter's prefix-stability rules) hash
    ``values`` instead of parsing the body a second time.
    """

    path: str
    """The item's place in the body: ``messages[3]``, ``messages[2].content[1:3]``, ``input[4:6]``."""
    values: tuple[Any, ...]
    """The JSON values (message objects, content blocks, input items) the item was read from, as sent."""


@dataclass(frozen=True, kw_only=True)
class ParsedRequest:
    """A provider request body read into contextwarden events."""

    format: WireFormat
    """The wire format the body was in."""
    model: str
    """The ``model`` the body names (empty for Gemini, whose model is in the URL)."""
    instructions: tuple[Instruction, ...]
    """The leading system or developer text, in order (the system prompt)."""
    events: tuple[Event, ...]
    """The conversation in order: :class:`~contextwarden.log.events.UserMessage`,
    :class:`~contextwarden.log.events.AssistantMessage`, :class:`~contextwarden.log.events.ToolResult`, and
    :class:`~contextwarden.log.events.Instruction` for a system message in the middle of it. Opaque
    provider items ride on the message they belong to."""
    tools: tuple[ToolDefinition, ...] = ()
    """The tools the request offers, in order."""
    max_tokens: int | None = None
    """The output limit the body asks for, when it names one."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Every other top-level field (sampling settings, ``stream``, ``tool_choice``...), verbatim;
    pass it back as ``render_request(..., extra=...)`` to send the same settings."""
    spans: tuple[RawSpan, ...] = ()
    """Where each of ``instructions`` then ``events`` came from, one span per item, in that order."""
    tool_spans: tuple[RawSpan, ...] = ()
    """Where each of ``tools`` came from, one span per tool."""

    def to_context(self) -> ModelContext:
        """The request as a :class:`ModelContext`, with no reduction: what rendering it sends back."""
        return context_of(self.model, self.instructions, self.events, self.tools)


class StreamAccumulator(Protocol):
    """Collects the server-sent events of one streamed response into the response it amounts to."""

    def feed(self, event_type: str, data: Mapping[str, Any]) -> None:
        """Take one SSE event: its ``event:`` name (empty when the stream names none) and its JSON data."""

    def result(self) -> ParsedResponse:
        """The response so far, as the codec's ``parse_response`` would read the non-streamed body."""


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
