"""The event types of a session log.

A session is an append-only sequence of events. Every event carries an envelope
(``session_id``, ``seq``, ``id``, ``created_at``, ``parent_id``) and a ``kind`` that names
its type. Callers build events with the envelope left at its defaults; the store assigns
``session_id`` and ``seq`` when it appends them and returns the stored copies.

``created_at`` is bookkeeping only: nothing renders it into a model prompt.

Their one JSON codec, for JSONL files and every store, is :mod:`contextwarden.log.codec`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Union

JSONValue = Union[str, int, float, bool, None, list["JSONValue"], dict[str, "JSONValue"]]  # noqa: UP007 (recursive alias)
"""A value that round-trips through JSON."""


_id_source: Callable[[], tuple[int, int]] | None = None
"""Where ids take their time and random bits from instead of the clock and ``os.urandom`` (see
``contextwarden.testing.seeded_event_ids``: reproducible runs of scripted sessions)."""


def new_event_id() -> str:
    """Return a new stable, unique event id: a UUIDv7 (RFC 9562) as 32 hex digits.

    Time-ordered (48 bits of Unix milliseconds, then 74 random bits), so the ids of events made
    one after another sit side by side in the stores' unique-id index: a batch of appends
    rewrites a few index pages instead of one random page per event.
    """
    if _id_source is None:
        rand = int.from_bytes(os.urandom(10), "big")
        millis = time.time_ns() // 1_000_000 & 0xFFFF_FFFF_FFFF
    else:
        millis, rand = _id_source()
    value = millis << 80 | 0x7 << 76 | (rand >> 64 & 0xFFF) << 64 | 0b10 << 62 | rand & 0x3FFF_FFFF_FFFF_FFFF
    return f"{value:032x}"


# --------------------------------------------------------------------------- parts


EventKind = Literal[
    "user",
    "assistant",
    "tool_result",
    "instruction",
    "steering",
    "pin",
    "setting",
    "usage",
    "compaction",
    "context_edit",
    "tool_set",
    "fork",
    "event",
]
"""The ``kind`` tag of every event class (``event`` only on the abstract base)."""


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One tool call made by the assistant."""

    id: str
    """The provider's call id; tool results refer to it."""
    name: str
    """The tool's name."""
    arguments: dict[str, JSONValue] = field(default_factory=dict)
    """Parsed arguments. Unparseable argument text is kept under ``{"_raw": text}``."""


@dataclass(frozen=True, kw_only=True)
class ThinkingBlock:
    """A reasoning block the model produced before its answer or tool calls."""

    text: str
    """The visible reasoning text (may be empty when only a signature is kept)."""
    signature: str = ""
    """The provider's opaque signature or encrypted content, replayed verbatim when allowed."""


@dataclass(frozen=True, kw_only=True)
class BinaryPart:
    """A non-text part of a message or tool result: an image, a file, raw bytes."""

    media_type: str
    """MIME type, for example ``image/png`` or ``application/octet-stream``."""
    data: bytes
    """The raw bytes (base64 in JSON)."""
    name: str = ""
    """An optional file name or label."""


@dataclass(frozen=True, kw_only=True)
class OpaquePart:
    """A provider item contextwarden does not interpret, kept to be sent back to that provider verbatim.

    Examples: an OpenAI Responses ``reasoning`` item with its ``encrypted_content``, a ``compaction``
    item, an Anthropic content block of a type this version does not know. Only the codec of
    ``format`` renders it, byte for byte; other formats leave it out.
    """

    format: str
    """The wire format that produced it (``anthropic``, ``openai_chat``, ``openai_responses``, ``gemini``)."""
    raw_json: str
    """The item exactly as the provider sent it, as compact JSON text (key order kept)."""
    position: int
    """Where it sat among the content blocks (or items) of its message, counting from 0; rendering
    puts it back there."""
    kind: str = ""
    """The item's own ``type`` (``reasoning``, ``compaction``, ...), so readers need not parse ``raw_json``."""


@dataclass(frozen=True, kw_only=True)
class ContextEdit:
    """One change to what the model sees of an earlier event, recorded in a :class:`ContextEditBatch`."""

    target_id: str
    """The id of the event (usually a tool result) whose projection changes."""
    action: Literal["mask", "supersede", "stale", "drop_thinking", "clear"]
    """What happens to it: masked by age, superseded by a newer version, made stale by a change,
    thinking dropped, or cleared to reclaim space."""
    replacement: str
    """The short text the model sees instead (a placeholder naming what was removed and how to get it)."""
    reason: str = ""
    """Why, for the decision log (for example ``superseded by read of src/a.py at seq 41``)."""


EVICTING_EDITS: frozenset[str] = frozenset({"mask", "supersede", "stale", "clear"})
"""Edit actions that take content out of the window (dropping old thinking does not: nothing to read back)."""


# --------------------------------------------------------------------------- events


@dataclass(frozen=True, kw_only=True)
class Event:
    """Fields every event carries. Do not instantiate directly; use a subclass."""

    kind: ClassVar[EventKind] = "event"
    is_window_event: ClassVar[bool] = False

    id: str = field(default_factory=new_event_id)
    """Stable unique id, assigned when the event is created."""
    session_id: str = ""
    """The session the event belongs to; set by the store on append."""
    seq: int = 0
    """Gapless 1-based position within the session; set by the store on append (0 = not yet stored)."""
    created_at: float = field(default_factory=time.time)
    """Unix time of creation. Never rendered into a model prompt."""
    parent_id: str | None = None
    """For branches: the id of the event this one follows, when it is not simply the previous seq."""


@dataclass(frozen=True, kw_only=True)
class UserMessage(Event):
    """A message from the user."""

    kind: ClassVar[EventKind] = "user"
    text: str
    """What the user said."""
    parts: tuple[BinaryPart, ...] = ()
    """Attached images or files."""
    opaque: tuple[OpaquePart, ...] = ()
    """Provider items kept verbatim (unknown content blocks), each with its position in the message."""

    @property
    def speaks(self) -> bool:
        """The user says or attaches something.

        False for a provider item a client sends on the user's side with no words (a tool search's output),
        which is neither the goal nor the latest request.
        """
        return bool(self.text.strip() or self.parts)


@dataclass(frozen=True, kw_only=True)
class AssistantMessage(Event):
    """One model response: text, reasoning and tool calls."""

    kind: ClassVar[EventKind] = "assistant"
    text: str = ""
    """The visible answer text."""
    thinking: tuple[ThinkingBlock, ...] = ()
    """Reasoning blocks, in order."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls, in the order the model made them."""
    model: str = ""
    """The model that produced it, when known."""
    stop_reason: str = ""
    """Why generation stopped (``end_turn``, ``tool_use``, ``max_tokens``...), when known."""
    opaque: tuple[OpaquePart, ...] = ()
    """Provider items kept verbatim (encrypted reasoning, compaction items, unknown blocks), each with
    its position among the message's blocks or items."""


@dataclass(frozen=True, kw_only=True)
class ToolResult(Event):
    """The result of one tool call. ``output`` is stored in full; truncation happens in projection."""

    kind: ClassVar[EventKind] = "tool_result"
    call_id: str
    """The id of the :class:`ToolCall` this answers."""
    tool_name: str
    """The tool's name (repeated here so a result is readable without its call)."""
    output: str
    """The full text output. May contain NUL bytes and lone surrogates (undecodable bytes)."""
    is_error: bool = False
    """Whether the tool reported failure."""
    exit_code: int | None = None
    """The process exit code, when the tool ran a process and it is known."""
    parts: tuple[BinaryPart, ...] = ()
    """Binary or image parts of the result."""


@dataclass(frozen=True, kw_only=True)
class Instruction(Event):
    """A system or developer instruction (system prompt, project rules, policy)."""

    kind: ClassVar[EventKind] = "instruction"
    text: str
    """The instruction text."""
    role: Literal["system", "developer"] = "system"
    """Which role it speaks with."""
    source: str = ""
    """Where it came from (a file path, ``default``, ``user``...)."""


@dataclass(frozen=True, kw_only=True)
class Steering(Event):
    """A later user constraint or correction that overrides earlier plans."""

    kind: ClassVar[EventKind] = "steering"
    text: str
    """The constraint or correction, verbatim."""


@dataclass(frozen=True, kw_only=True)
class Pin(Event):
    """An explicit pin: text that must stay visible verbatim in every request."""

    kind: ClassVar[EventKind] = "pin"
    text: str
    """The pinned text (a constraint, a fact, a rule)."""
    label: str = "constraint"
    """What it is (``constraint``, ``goal``, ``fact``)."""


@dataclass(frozen=True, kw_only=True)
class SettingChange(Event):
    """A change of model or generation settings from this point on."""

    kind: ClassVar[EventKind] = "setting"
    model: str = ""
    """The new model name, or empty when only settings change."""
    settings: dict[str, JSONValue] = field(default_factory=dict)
    """Other settings (thinking level, temperature, ...)."""


@dataclass(frozen=True, kw_only=True)
class UsageReport(Event):
    """Provider-reported usage for one model call."""

    kind: ClassVar[EventKind] = "usage"
    input_tokens: int
    """Total input tokens the provider counted, cached ones included."""
    output_tokens: int = 0
    """Output tokens (reasoning included)."""
    cache_read_tokens: int = 0
    """Input tokens served from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """Input tokens written to the provider's prompt cache."""
    cache_write_1h_tokens: int = 0
    """Of ``cache_write_tokens``, those written with Anthropic's 1-hour lifetime (billed 2x input, not 1.25x)."""
    reasoning_tokens: int = 0
    """Of ``output_tokens``, those the model spent reasoning (OpenAI's ``reasoning_tokens``, Codex's
    ``reasoning_output_tokens``); 0 when not reported."""
    request_id: str = ""
    """The request this usage belongs to (the provider's id or our own)."""
    response_event_id: str = ""
    """The id of the assistant message the call produced, when recorded."""
    model: str = ""
    """The model billed."""


@dataclass(frozen=True, kw_only=True)
class Compaction(Event):
    """A compaction: from here on the model sees ``summary`` instead of events before ``first_kept_seq``."""

    kind: ClassVar[EventKind] = "compaction"
    is_window_event: ClassVar[bool] = True
    summary: str
    """The summary text that replaces the compacted events."""
    first_kept_seq: int
    """The first seq kept verbatim after the summary; events before it are covered by the summary."""
    covered_from_seq: int = 1
    """The first seq the summary covers."""
    covered_to_seq: int = 0
    """The last seq the summary covers."""
    tokens_before: int = 0
    """Context size before the compaction."""
    tokens_after: int = 0
    """Context size after the compaction."""
    summarizer: str = ""
    """Which summarizer (and model) wrote the summary."""
    summarizer_input_tokens: int = 0
    """Tokens the summarizer read."""
    summarizer_output_tokens: int = 0
    """Tokens the summarizer wrote."""
    verification: dict[str, JSONValue] = field(default_factory=dict)
    """What the post-compaction check found and repaired."""
    state: dict[str, JSONValue] = field(default_factory=dict)
    """A snapshot of the derived task state at the cut, so resume needs no older events."""
    details: dict[str, JSONValue] = field(default_factory=dict)
    """Anything else worth recording (trigger, focus, provider-side compaction data)."""


@dataclass(frozen=True, kw_only=True)
class ContextEditBatch(Event):
    """A batch of context edits (masking, supersession, clearing) applied from this point on."""

    kind: ClassVar[EventKind] = "context_edit"
    is_window_event: ClassVar[bool] = True
    edits: tuple[ContextEdit, ...]
    """The edits, each naming its target event."""
    reason: str = ""
    """Why the planner chose this batch now."""
    tokens_before: int = 0
    """Context size before the batch."""
    tokens_after: int = 0
    """Context size after the batch."""


@dataclass(frozen=True, kw_only=True)
class ToolSetChange(Event):
    """The set of tools exposed to the model changes from this point on."""

    kind: ClassVar[EventKind] = "tool_set"
    is_window_event: ClassVar[bool] = True
    exposed: tuple[str, ...]
    """Names of the tools exposed from now on, in their stable order."""
    reason: str = ""
    """Why (a phase change, a lazy load)."""


@dataclass(frozen=True, kw_only=True)
class ForkMarker(Event):
    """The first event of a forked session: it names where the branch left its source."""

    kind: ClassVar[EventKind] = "fork"
    source_session_id: str
    """The session the branch was forked from."""
    at_seq: int
    """The last seq of the source that the branch shares."""


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        UserMessage,
        AssistantMessage,
        ToolResult,
        Instruction,
        Steering,
        Pin,
        SettingChange,
        UsageReport,
        Compaction,
        ContextEditBatch,
        ToolSetChange,
        ForkMarker,
    )
}
"""Every event kind and its class."""

WINDOW_KINDS: frozenset[EventKind] = frozenset(c.kind for c in EVENT_TYPES.values() if c.is_window_event)
"""Kinds that change the model's window (compaction, context edits, tool-set changes)."""


def with_position(event: Event, *, session_id: str, seq: int) -> Event:
    """Return a copy of ``event`` placed at ``seq`` in ``session_id`` (what a store does on append)."""
    # not dataclasses.replace: it re-runs __init__ and costs more than encoding the event. Events
    # are plain frozen dataclasses (no __slots__, no __post_init__), so copying the fields is the same.
    placed = _new_object(type(event))
    fields = placed.__dict__
    fields.update(event.__dict__)
    fields["session_id"] = session_id
    fields["seq"] = seq
    return placed


_new_object = object.__new__
