"""The ``Provider`` seam: one method that sends a built request to a model and returns its answer.

It sits outside :mod:`contextwarden.providers` so that the summarizers (:mod:`.compaction`) can
speak to a model without importing the HTTP clients and, through them, the wire codecs.

A provider takes what ``ContextManager.build`` returns, a :class:`~contextwarden.context.ModelContext`
(the one model-facing vocabulary, which the wire codecs render), and answers in the log's own words: the
:class:`~contextwarden.log.events.AssistantMessage` and the
:class:`~contextwarden.log.events.UsageReport` that belongs to it (:class:`ModelReply`), ready to be
appended. The HTTP clients (:class:`~contextwarden.providers.OpenAICompatProvider`,
:class:`~contextwarden.providers.AnthropicProvider`) render the context with their format's wire codec
and read the answer with the same codec; :class:`~contextwarden.testing.ScriptedProvider` answers from
a script for tests.

Errors are raised as :class:`~contextwarden.errors.ProviderError` subclasses (see
:mod:`contextwarden.providers.classify`), so callers can react to the cause (compact on overflow,
give up on cancellation) without knowing which provider they talk to.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol, runtime_checkable

from ._deprecated import deprecated_names
from .context import ModelContext
from .log.events import AssistantMessage, JSONValue, ThinkingBlock, ToolCall, UsageReport


@dataclass(frozen=True, kw_only=True)
class CallOptions:
    """Per-call settings: what the model is asked for, and how the call runs."""

    model: str = ""
    """The model name sent to the provider; empty sends the context's ``model``."""
    max_tokens: int | None = None
    """The most output tokens the model may produce; ``None`` leaves the default (Anthropic, which
    requires a value, gets the model profile's output limit)."""
    temperature: float | None = None
    """Sampling temperature; ``None`` leaves the provider's default."""
    thinking: str | None = None
    """Reasoning effort (``off``, ``minimal``, ``low``, ``medium``, ``high``); ``None`` leaves the default."""
    stop: tuple[str, ...] = ()
    """Stop sequences."""
    response_format: dict[str, JSONValue] | None = None
    """Constrained decoding, sent as the Chat Completions ``response_format`` field (for example
    llama-cpp-python's ``{"type": "json_object", "schema": {...}}``); None sends nothing."""
    timeout: float | None = None
    """Seconds to wait for one HTTP attempt; ``None`` keeps the provider's timeout."""
    cancel: threading.Event | None = None
    """Set it from any thread to cancel. Cancellation always wins: the call raises
    :class:`~contextwarden.errors.Cancelled` at once, even during a backoff wait or a request."""
    max_retries: int | None = None
    """Retries after the first attempt for rate limits, 5xx and connection errors; ``None`` keeps
    the provider's setting."""


@dataclass(frozen=True, kw_only=True)
class ModelReply:
    """A model's answer, as the events a caller appends to the log."""

    message: AssistantMessage
    """The answer: text, tool calls in the order the model made them, thinking, the model that
    answered and the stop reason (``end_turn``, ``max_tokens``, ``tool_use``, or the provider's own)."""
    usage: UsageReport
    """Token usage as the provider reported it (all zero when it reported none), linked to ``message``."""
    raw: dict[str, JSONValue] = field(default_factory=dict, repr=False)
    """The decoded response body, for diagnostics and provider-specific fields."""

    @property
    def text(self) -> str:
        """The visible answer text (empty when the model only called tools)."""
        return self.message.text

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """Tool calls, in the order the model made them."""
        return self.message.tool_calls

    @property
    def thinking(self) -> tuple[ThinkingBlock, ...]:
        """Reasoning blocks the model returned, in order."""
        return self.message.thinking

    @property
    def stop_reason(self) -> str:
        """Why the model stopped: ``end_turn``, ``max_tokens``, ``tool_use`` or the provider's own value."""
        return self.message.stop_reason

    @property
    def model(self) -> str:
        """The model that answered."""
        return self.message.model


def model_reply(
    message: AssistantMessage, usage: UsageReport | None, *, model: str, raw: dict[str, JSONValue] | None = None
) -> ModelReply:
    """The reply of a parsed answer, its usage (zero when the body had none) pointing at the message.

    ``model`` names the model when the answer does not.
    """
    if not message.model:
        message = dataclasses.replace(message, model=model)
    usage = usage if usage is not None else UsageReport(input_tokens=0)
    usage = dataclasses.replace(usage, response_event_id=message.id, model=message.model)
    return ModelReply(message=message, usage=usage, raw=dict(raw or {}))


@runtime_checkable
class Provider(Protocol):
    """A model that answers built requests."""

    name: str
    """A short label for logs and recorded usage (``openai-compat``, ``anthropic``, ...)."""

    def complete(self, context: ModelContext, *, options: CallOptions | None = None) -> ModelReply:
        """Send ``context`` and return the answer, or raise a ``ProviderError`` subclass."""
        ...


def _compat(name: str) -> object:
    from . import _chat_compat

    return getattr(_chat_compat, name)


_INSTEAD = {
    "ChatMessage": "contextwarden.Message",
    "ChatRequest": "contextwarden.ModelContext with CallOptions",
    "ChatResponse": "contextwarden.ModelReply",
    "Usage": "contextwarden.UsageReport",
    "Role": "contextwarden.context.Role",
    "request_context": "a ModelContext (what ContextManager.build returns)",
    "usage_of": "ModelReply.usage",
}
__getattr__ = deprecated_names(__name__, {old: (partial(_compat, old), instead) for old, instead in _INSTEAD.items()})
