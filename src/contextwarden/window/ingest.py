"""Ingestion: how one event's content becomes a bounded, counted context item.

Everything an item is made of is decided here, once, when its event arrives: arguments and texts
are cut to their caps (each cut is a decision of the log), and the item is counted. The
:class:`~contextwarden.window.projection.Projection` feeds events through these helpers in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..context import Decision, Message
from ..log.events import AssistantMessage, Event, JSONValue, ThinkingBlock, ToolCall
from ..tokens import MESSAGE_OVERHEAD, TokenCounter
from .accounting import message_tokens
from .items import ContextItem, Tier
from .policies.placeholders import Retrievable
from .policies.presets import ToolPolicy
from .policies.truncate import truncate_output

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "ProjectionConfig",
    "bound_arguments",
    "bound_assistant",
    "bound_calls",
    "bounded_text",
    "message_item",
]

MAX_ARGUMENT_CHARS = 8_000
"""A string tool-call argument longer than this is cut in the middle with a marker."""


EarlierOutput = Callable[[int], "str | None"]
"""The output of the tool result logged at a seq of the window's session (``None`` if it is not there)."""


@dataclass(frozen=True, kw_only=True)
class ProjectionConfig:
    """How events are projected."""

    counter: TokenCounter
    """Counts every item once, at ingestion."""
    tool_policies: Sequence[ToolPolicy]
    """Per-tool normalize/truncate/retain rules (also what derived state classifies calls by)."""
    max_item_tokens: int = 10_000
    """Hard cap of every item: no item over 10,000 tokens (``docs/behaviours.md``, row 47)."""
    retrieval: Retrievable = True
    """How the model gets evicted content back, which markers and placeholders name (:data:`Retrievable`)."""
    client_window_notes: bool = True
    """A window opened by the client's own trim or rewind starts with the pinned block and a note."""
    references: bool = True
    """A tool output the window already shows is sent as a line naming its visible twin (:mod:`.references`)."""
    earlier_output: EarlierOutput | None = None
    """Reads a logged tool output back by seq, so a result that points back to one the window no
    longer shows can show it (:mod:`.pointers`); ``None``: pointers stay as the client sent them."""


def bound_arguments(call: ToolCall, max_chars: int = MAX_ARGUMENT_CHARS) -> tuple[ToolCall, bool]:
    """Cut string arguments longer than ``max_chars`` in the middle so no assistant item is unbounded."""
    changed = False
    bounded: dict[str, JSONValue] = {}
    for key, value in call.arguments.items():
        if isinstance(value, str) and len(value) > max_chars:
            half = max_chars // 2
            cut = len(value) - 2 * half
            value = f"{value[:half]}\n[... {cut} characters of this argument omitted ...]\n{value[-half:]}"
            changed = True
        bounded[key] = value
    return (replace(call, arguments=bounded) if changed else call), changed


_MIN_ARGUMENT_CHARS = 200
"""Arguments are never cut shorter than this, whatever the item cap leaves them."""
_MIN_TEXT_TOKENS = 256
"""The answer text keeps at least this much, even beside reasoning that cannot be cut (signed thinking)."""


def bound_calls(
    calls: Sequence[ToolCall], thinking: Sequence[ThinkingBlock], budget: int, counter: TokenCounter
) -> tuple[list[ToolCall], set[str], int]:
    """Cut the calls' string arguments until the calls and ``thinking`` fit ``budget`` tokens.

    Each argument is first held to :data:`MAX_ARGUMENT_CHARS`; while the whole is still over ``budget``, every
    long argument is cut shorter in proportion. Returns the calls, the ids of those cut, and their tokens
    with the thinking's and the message framing.
    """
    max_chars = MAX_ARGUMENT_CHARS
    while True:
        cut: set[str] = set()
        bounded: list[ToolCall] = []
        for call in calls:
            shorter, changed = bound_arguments(call, max_chars)
            bounded.append(shorter)
            if changed:
                cut.add(call.id)
        tokens = message_tokens(Message(role="assistant", tool_calls=tuple(bounded), thinking=tuple(thinking)), counter)
        if tokens <= budget or max_chars <= _MIN_ARGUMENT_CHARS:
            return bounded, cut, tokens
        max_chars = max(_MIN_ARGUMENT_CHARS, int(max_chars * budget / tokens * 0.9))


def bounded_text(
    text: str, artifact_id: str, config: ProjectionConfig, limit: int | None = None
) -> tuple[str, bool, int, Decision | None]:
    """``text`` cut to ``limit`` (default the item cap).

    Returns the text, whether it was cut, its original tokens and the cut's decision.
    """
    limit = config.max_item_tokens if limit is None else limit
    cut = truncate_output(
        text,
        max_tokens=limit,
        counter=config.counter,
        artifact_id=artifact_id,
        retrievable=config.retrieval,
    )
    decision = None
    if cut.truncated:
        decision = Decision(
            action="truncate",
            target=artifact_id,
            reason=f"output of {cut.original_tokens} tokens cut to {limit} at ingestion",
            tokens_saved=cut.original_tokens - limit,
        )
    return cut.text, cut.truncated, cut.original_tokens, decision


def message_item(
    event: Event, message: Message, counter: TokenCounter, *, text_tokens: int | None = None, **fields: object
) -> ContextItem:
    """The item of ``message``; ``text_tokens`` is the count of its text when ingestion already has it."""
    tokens = message_tokens(message, counter, text_tokens=text_tokens)
    message = replace(message, tokens=tokens)
    base: dict[str, object] = {
        "id": event.id,
        "kind": event.kind,
        "message": message,
        "tokens": tokens,
        "tier": Tier.HISTORY,
        "source_ids": (event.id,),
        "recency": event.seq,
        "original_tokens": tokens,
    }
    base.update(fields)
    return ContextItem(**base)  # type: ignore[arg-type]


def bound_assistant(
    event: AssistantMessage, config: ProjectionConfig
) -> tuple[str, bool, int, list[ToolCall], list[Decision]]:
    """Hold one assistant message, text, thinking and calls together, to the item cap (``docs/behaviours.md``, row 47).

    The calls get what the text leaves, but at least half the cap when both are long; the text gets the rest.
    Returns the text, whether it was cut, its original tokens, the bounded calls and the cuts' decisions.
    """
    limit = config.max_item_tokens
    half = limit // 2
    calls, cut, used = bound_calls(event.tool_calls, event.thinking, limit - half, config.counter)
    if used > half and event.text:
        room = limit - min(config.counter.count(event.text) + MESSAGE_OVERHEAD, half)
        calls, cut, used = bound_calls(event.tool_calls, event.thinking, room, config.counter)
    decisions = [
        Decision(action="truncate", target=event.id, reason=f"oversized arguments of call {c.id} cut in the middle")
        for c in event.tool_calls
        if c.id in cut
    ]
    # ``used`` already holds the message framing, so the text may take exactly what is left.
    text, truncated, original, decision = bounded_text(
        event.text, event.id, config, max(limit - used, _MIN_TEXT_TOKENS)
    )
    if decision is not None:
        decisions.append(decision)
    return text, truncated, original, calls, decisions
