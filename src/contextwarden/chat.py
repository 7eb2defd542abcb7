"""The ``Provider`` seam: one method that sends a chat request to a model and returns its answer.

It sits outside :mod:`contextwarden.providers` so that the summarizers (:mod:`.compaction`) can
speak to a model without importing the HTTP clients and, through them, the wire codecs.

The request and response types here are provider-neutral. The HTTP clients
(:class:`~contextwarden.providers.OpenAICompatProvider`,
:class:`~contextwarden.providers.AnthropicProvider`) turn a request into a
:class:`~contextwarden.context.ModelContext` (:func:`request_context`) that their format's wire codec
renders, and read the answer with the same codec;
:class:`~contextwarden.testing.ScriptedProvider` answers from a script for tests.

Errors are raised as :class:`~contextwarden.errors.ProviderError` subclasses (see
:mod:`contextwarden.providers.classify`), so callers can react to the cause (compact on overflow,
give up on cancellation) without knowing which provider they talk to.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from .context import Message, ModelContext, ToolDefinition
from .log.events import JSONValue, ThinkingBlock, ToolCall, UsageReport

Role = Literal["system", "user", "assistant", "tool"]
"""Who speaks a :class:`ChatMessage`."""


@dataclass(frozen=True)
class ChatMessage:
    """One message of a chat request, in a provider-neutral shape."""

    role: Role
    """``system``, ``user``, ``assistant`` or ``tool`` (a tool result)."""
    content: str
    """The text. For a ``tool`` message, the tool's output."""
    tool_calls: tuple[ToolCall, ...] = ()
    """For an ``assistant`` message: the tool calls it made, in order."""
    tool_call_id: str = ""
    """For a ``tool`` message: the id of the call it answers."""
    name: str = ""
    """For a ``tool`` message: the tool's name. Otherwise an optional participant name."""
    thinking: tuple[ThinkingBlock, ...] = ()
    """For an ``assistant`` message: reasoning blocks to replay (Anthropic needs their signatures)."""


@dataclass(frozen=True)
class ChatRequest:
    """Everything one model call needs."""

    messages: tuple[ChatMessage, ...]
    """The conversation, system messages included, oldest first."""
    model: str
    """The provider's model name."""
    max_tokens: int
    """The most output tokens the model may produce."""
    tools: tuple[dict[str, JSONValue], ...] = ()
    """Tool schemas. Neutral form ``{"name", "description", "parameters"}`` (JSON Schema); the
    OpenAI (``{"type": "function", "function": {...}}``) and Anthropic (``input_schema``) forms are
    accepted too and converted as needed."""
    temperature: float | None = None
    """Sampling temperature; ``None`` leaves the provider's default."""
    thinking: str | None = None
    """Reasoning effort (``off``, ``minimal``, ``low``, ``medium``, ``high``); ``None`` leaves the default."""
    stop: tuple[str, ...] = ()
    """Stop sequences."""
    response_format: dict[str, JSONValue] | None = None
    """Constrained decoding, sent as the Chat Completions ``response_format`` field (for example
    llama-cpp-python's ``{"type": "json_object", "schema": {...}}``); None sends nothing."""


def request_context(request: ChatRequest) -> ModelContext:
    """The request as a :class:`ModelContext`, for a wire codec to render.

    Messages keep their order (a system message stays where it is: leading ones are the system
    prompt); tools in any accepted form become definitions.
    """
    return ModelContext(
        model=request.model,
        system="",
        messages=tuple(_context_message(m) for m in request.messages),
        tools=tuple(_tool_definition(t) for t in request.tools),
    )


def _context_message(message: ChatMessage) -> Message:
    if message.role == "system":
        return Message(role="system", text=message.content, section="instructions")
    if message.role == "tool":
        return Message(
            role="tool",
            text=message.content,
            tool_call_id=message.tool_call_id,
            tool_name=message.name,
            section="tool_output",
        )
    return Message(role=message.role, text=message.content, thinking=message.thinking, tool_calls=message.tool_calls)


def _tool_definition(tool: dict[str, JSONValue]) -> ToolDefinition:
    function = tool.get("function")
    source = function if tool.get("type") == "function" and isinstance(function, dict) else tool
    schema = source.get("parameters", source.get("input_schema"))
    return ToolDefinition(
        name=str(source.get("name", "")),
        description=str(source.get("description") or ""),
        parameters=dict(schema) if isinstance(schema, dict) else {"type": "object", "properties": {}},
    )


@dataclass(frozen=True)
class Usage:
    """Token usage of one call, normalized across providers."""

    input_tokens: int = 0
    """TOTAL input tokens, cached ones included (Anthropic's three input counts are added up)."""
    output_tokens: int = 0
    """Output tokens, reasoning included."""
    cache_read_tokens: int = 0
    """Input tokens served from the provider's prompt cache (part of ``input_tokens``)."""
    cache_write_tokens: int = 0
    """Input tokens written to the provider's prompt cache (part of ``input_tokens``)."""


def usage_of(report: UsageReport | None) -> Usage:
    """The :class:`Usage` of a parsed response's usage report (all zero when the body had none)."""
    if report is None:
        return Usage()
    return Usage(
        input_tokens=report.input_tokens,
        output_tokens=report.output_tokens,
        cache_read_tokens=report.cache_read_tokens,
        cache_write_tokens=report.cache_write_tokens,
    )


@dataclass(frozen=True)
class ChatResponse:
    """A model's answer."""

    text: str
    """The visible answer text (empty when the model only called tools)."""
    tool_calls: tuple[ToolCall, ...]
    """Tool calls, in the order the model made them."""
    stop_reason: str
    """``end_turn``, ``max_tokens`` or ``tool_use``; any other provider value is passed through raw."""
    usage: Usage
    """Token usage as the provider reported it."""
    model: str
    """The model that answered (the provider's report, else the requested name)."""
    raw: dict[str, JSONValue] = field(default_factory=dict, repr=False)
    """The decoded response body, for diagnostics and provider-specific fields."""
    thinking: tuple[ThinkingBlock, ...] = ()
    """Reasoning blocks the model returned, in order."""


@dataclass(frozen=True, kw_only=True)
class CallOptions:
    """Per-call settings that override a provider's defaults."""

    timeout: float | None = None
    """Seconds to wait for one HTTP attempt; ``None`` keeps the provider's timeout."""
    cancel: threading.Event | None = None
    """Set it from any thread to cancel. Cancellation always wins: the call raises
    :class:`~contextwarden.errors.Cancelled` at once, even during a backoff wait or a request."""
    max_retries: int | None = None
    """Retries after the first attempt for rate limits, 5xx and connection errors; ``None`` keeps
    the provider's setting."""


@runtime_checkable
class Provider(Protocol):
    """A model that answers chat requests."""

    name: str
    """A short label for logs and recorded usage (``openai-compat``, ``anthropic``, ...)."""

    def complete(self, request: ChatRequest, *, options: CallOptions | None = None) -> ChatResponse:
        """Send ``request`` and return the answer, or raise a ``ProviderError`` subclass."""
        ...
