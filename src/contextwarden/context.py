"""The provider-neutral request the builder produces: :class:`ModelContext` and its messages.

The codecs of :mod:`contextwarden.wire` turn a ``ModelContext`` into an OpenAI, Anthropic or Gemini
request body; nothing here knows any provider's wire format.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from ._deprecated import warn_renamed
from .log.events import BinaryPart, OpaquePart, ThinkingBlock, ToolCall, ToolResult

Role = Literal["system", "developer", "user", "assistant", "tool"]

Section = Literal["system", "tools", "instructions", "pinned", "summary", "conversation", "tool_output"]
"""A section of a request (see :data:`SECTIONS`)."""

SECTIONS: tuple[Section, ...] = (
    "system",
    "tools",
    "instructions",
    "pinned",
    "summary",
    "conversation",
    "tool_output",
)
"""Sections a request is measured by, in prompt order (tool_output is interleaved with conversation)."""


REASONING_KINDS = frozenset({"reasoning", "thinking", "redacted_thinking"})
"""``OpaquePart.kind`` values that are the model's reasoning (dropped with the thinking of a turn)."""


@dataclass(frozen=True, kw_only=True)
class Message:
    """One message of a request, in provider-neutral form."""

    role: Role
    """Who speaks. ``tool`` messages answer one tool call each."""
    text: str = ""
    """The text content."""
    thinking: tuple[ThinkingBlock, ...] = ()
    """Reasoning blocks replayed with an assistant message (when the provider allows)."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls of an assistant message."""
    tool_call_id: str = ""
    """For ``tool`` messages: the call answered."""
    tool_name: str = ""
    """For ``tool`` messages: the tool's name."""
    is_error: bool = False
    """For ``tool`` messages: whether the tool failed."""
    parts: tuple[BinaryPart, ...] = ()
    """Images and files attached."""
    opaque: tuple[OpaquePart, ...] = ()
    """Provider items kept verbatim; only the codec of their format renders them, at their position."""
    section: Section = "conversation"
    """Which section of :data:`SECTIONS` the message belongs to."""
    source_ids: tuple[str, ...] = ()
    """Ids of the events this message was projected from."""
    tokens: int = 0
    """Token count of the message's content, by the builder's counter."""

    def without_thinking(self) -> Message:
        """The message with its reasoning taken out: thinking blocks and opaque reasoning items."""
        opaque = tuple(part for part in self.opaque if part.kind not in REASONING_KINDS)
        return replace(self, thinking=(), opaque=opaque)


def tool_message(event: ToolResult, text: str | None = None) -> Message:
    """The ``tool`` message of a tool result: its output, or ``text`` shown in its place."""
    return Message(
        role="tool",
        text=event.output if text is None else text,
        tool_call_id=event.call_id,
        tool_name=event.tool_name,
        is_error=event.is_error,
        parts=event.parts,
        section="tool_output",
        source_ids=(event.id,),
    )


DecisionAction = Literal[
    "mask",
    "supersede",
    "stale",
    "drop_thinking",
    "clear",
    "truncate",
    "recall",
    "reference",
    "compact",
    "pairing",
    "plan",
    "escape_fragment",
    "dynamic_prefix",
]
"""Every action a :class:`Decision` records."""


@dataclass(frozen=True, kw_only=True)
class Decision:
    """One entry of the decision log: what was reduced or changed, and why."""

    action: DecisionAction
    """What was done: an edit of the log's window events (``mask``, ``supersede``, ``stale``,
    ``drop_thinking``, ``clear``), a cut at ingestion (``truncate``), an earlier output shown in a result
    that points back to it (``recall``), an output already shown sent as a line naming its visible twin at
    ingestion (``reference``), a compaction (``compact``), a repair of call/result pairing
    (``pairing``), the planner's note on its choice (``plan``), an unregistered fragment escaped at
    ingestion (``escape_fragment``), or values that look dynamic in the system text (``dynamic_prefix``,
    nothing changed: the caller should move them)."""
    target: str
    """The event or item id concerned."""
    reason: str
    """Why, in words a person can check."""
    tokens_saved: int = 0
    """How many tokens it took out of the request."""


@dataclass(frozen=True, kw_only=True)
class ToolDefinition:
    """A tool as the model sees it: the one tool type from the caller to the wire.

    What runs a call is kept apart (:class:`~contextwarden.loop.AgentTool` pairs a definition with its
    function); ``group`` lets a :class:`~contextwarden.tools.ToolRegistry` expose tools by task phase.
    """

    name: str
    """The tool's name."""
    description: str
    """What it does."""
    parameters: dict[str, object] = field(default_factory=dict)
    """JSON schema of its arguments."""
    group: str = ""
    """Capability group (``explore``, ``edit``, ``execute``, ``release``...) for phase exposure; empty for
    none. The model never sees it."""
    format: str = ""
    """For a provider's own tool (an Anthropic server tool, a Responses built-in): the wire format
    that defined it. Only that format's codec sends it (``raw_json``, verbatim); others leave it out."""
    raw_json: str = ""
    """For a provider's own tool: its definition exactly as the provider takes it, as JSON text."""


@dataclass(frozen=True, kw_only=True)
class ModelContext:
    """Everything one model call sees, measured, with the reasons behind it."""

    model: str
    """The model profile's name."""
    system: str
    """The stable system prompt (no dates, ids or counts)."""
    messages: tuple[Message, ...]
    """The conversation, in order, pairing-normalized."""
    tools: tuple[ToolDefinition, ...] = ()
    """Tools exposed, in a stable order."""
    sections: dict[str, int] = field(default_factory=dict)
    """Tokens per section (see :data:`SECTIONS`)."""
    total_tokens: int = 0
    """Tokens of the whole request by ``counter``."""
    budget: int = 0
    """The usable input budget the request was fitted to."""
    context_window: int | None = None
    """The model's context window in tokens (its capacity), when known."""
    counter: str = ""
    """Name of the token counter used."""
    cache_breakpoints: tuple[int, ...] = ()
    """Indices into ``messages`` after which a stable boundary lies (-1: after system and tools).
    Anthropic renderers place ``cache_control`` there (at most 4)."""
    decisions: tuple[Decision, ...] = ()
    """What this build reduced or repaired, and why (the history stays in the log as window events)."""
    window_event_ids: tuple[str, ...] = ()
    """Ids of window events the build appended to the log."""

    @property
    def window(self) -> int | None:
        """Deprecated: :attr:`context_window` (the word "window" now means the session's current window)."""
        warn_renamed("ModelContext.window", "ModelContext.context_window")
        return self.context_window
