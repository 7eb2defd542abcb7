"""The chat request and response types of the previous release, kept importable for one more.

Import them from :mod:`contextwarden.chat` or :mod:`contextwarden.providers` (with a ``DeprecationWarning``).
A provider now takes a :class:`~contextwarden.context.ModelContext` and answers with a
:class:`~contextwarden.chat.ModelReply`; :func:`request_context` turns an old request into the context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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


def to_chat_request(
    ctx: ModelContext, *, model: str, max_tokens: int, thinking: str | None = None, temperature: float | None = None
) -> ChatRequest:
    """A provider-neutral :class:`ChatRequest` for a built :class:`ModelContext`."""
    messages: list[ChatMessage] = [ChatMessage("system", ctx.system)] if ctx.system else []
    for m in ctx.messages:
        notes = "".join(f"\n[attachment: {p.media_type}, {len(p.data)} bytes]" for p in m.parts)
        if m.role == "tool":
            messages.append(ChatMessage("tool", m.text + notes, tool_call_id=m.tool_call_id, name=m.tool_name))
        elif m.role == "assistant":
            messages.append(ChatMessage("assistant", m.text, tool_calls=m.tool_calls, thinking=m.thinking))
        elif m.role in ("system", "developer"):
            messages.append(ChatMessage("system", m.text))
        else:
            messages.append(ChatMessage("user", m.text + notes))
    tools = tuple(
        {
            "name": t.name,
            "description": t.description,
            "parameters": dict(t.parameters) or {"type": "object", "properties": {}},
        }
        for t in ctx.tools
    )
    return ChatRequest(
        messages=tuple(messages),
        model=model,
        max_tokens=max_tokens,
        tools=tools,  # type: ignore[arg-type]
        thinking=thinking,
        temperature=temperature,
    )
