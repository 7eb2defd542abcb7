"""Ingestion: how one event's content becomes a bounded, counted context item.

Everything an item is made of is decided here, once, when its event arrives: arguments and texts
are cut to their caps (each cut is a decision of the log), and the item is counted. The
:class:`~contextwarden.window.projection.Projection` feeds events through these helpers in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..context import Decision, Message
from ..log.events import Event, JSONValue, ToolCall
from ..tokens import TokenCounter
from .accounting import message_tokens
from .items import ContextItem, Tier
from .policies.placeholders import Retrievable
from .policies.presets import ToolPolicy
from .policies.truncate import truncate_output

__all__ = ["MAX_ARGUMENT_CHARS", "ProjectionConfig", "bound_arguments", "bounded_text", "message_item"]

MAX_ARGUMENT_CHARS = 8_000
"""A string tool-call argument longer than this is cut in the middle with a marker."""


@dataclass(frozen=True, kw_only=True)
class ProjectionConfig:
    """How events are projected."""

    counter: TokenCounter
    """Counts every item once, at ingestion."""
    tool_policies: Sequence[ToolPolicy]
    """Per-tool normalize/truncate/retain rules (also what derived state classifies calls by)."""
    max_item_tokens: int = 10_000
    """Hard cap of every item (seed 003 rule 4)."""
    retrieval: Retrievable = True
    """How the model gets evicted content back, which markers and placeholders name (:data:`Retrievable`)."""


def bound_arguments(call: ToolCall) -> tuple[ToolCall, bool]:
    """Cut oversized string arguments in the middle so no assistant item is unbounded."""
    changed = False
    bounded: dict[str, JSONValue] = {}
    for key, value in call.arguments.items():
        if isinstance(value, str) and len(value) > MAX_ARGUMENT_CHARS:
            half = MAX_ARGUMENT_CHARS // 2
            cut = len(value) - 2 * half
            value = f"{value[:half]}\n[... {cut} characters of this argument omitted ...]\n{value[-half:]}"
            changed = True
        bounded[key] = value
    return (replace(call, arguments=bounded) if changed else call), changed


def bounded_text(text: str, artifact_id: str, config: ProjectionConfig) -> tuple[str, bool, int, Decision | None]:
    """``text`` cut to the item cap: the text, whether it was cut, its original tokens and the cut's decision."""
    limit = config.max_item_tokens
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
