"""Token accounting of a window: what one message costs, the normalized request, and the estimate.

Counting happens once per item, at ingestion; these helpers keep the sums true as the window
grows and as edits replace items, without recounting the settled part.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..context import Decision, Message
from ..log.events import JSONValue, UsageReport
from ..pairing import normalize_pairing
from ..tokens import MESSAGE_OVERHEAD, TOOL_CALL_OVERHEAD, TokenCounter, image_tokens
from .items import ContextItem

__all__ = ["Estimate", "NormalizedPrefix", "anchored_estimate", "args_json", "message_tokens"]


def args_json(arguments: dict[str, JSONValue]) -> str:
    """A call's arguments as the model receives them (a lone ``_raw`` string is sent as is)."""
    raw = arguments.get("_raw") if len(arguments) == 1 else None
    if isinstance(raw, str):
        return raw
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def message_tokens(message: Message, counter: TokenCounter, *, text_tokens: int | None = None) -> int:
    """Tokens of one message: its text, thinking and tool calls, plus framing overhead.

    ``text_tokens`` is ``counter``'s count of ``message.text`` when the caller already has it
    (ingestion counts every text to decide whether to truncate it), so the text is not counted twice.
    """
    if not message.text:
        n = MESSAGE_OVERHEAD
    else:
        n = MESSAGE_OVERHEAD + (counter.count(message.text) if text_tokens is None else text_tokens)
    for block in message.thinking:
        n += counter.count(block.text) + (len(block.signature) // 4)
    for call in message.tool_calls:
        n += TOOL_CALL_OVERHEAD + counter.count(call.name) + counter.count(args_json(call.arguments))
    for part in message.parts:
        n += image_tokens(part.data) if part.media_type.startswith("image/") else 16
    for item in message.opaque:  # encrypted or unknown provider items: about 4 bytes a token
        n += len(item.raw_json) // 4
    return n


class NormalizedPrefix:
    """Pairing normalization of a growing item list, reusing the settled prefix.

    Normalization is group-local, so everything before the last assistant group normalizes once;
    an edit inside that prefix resets it (:meth:`invalidate`).
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._messages: list[Message] = []
        self._decisions: list[Decision] = []
        self._upto = 0
        self._sections: dict[str, int] = {}
        self._ids: set[str] = set()  # call ids the settled messages use (pairing keeps ids unique)

    def invalidate(self, position: int) -> None:
        """An item at ``position`` changed: forget the settled prefix when it covers it."""
        if position < self._upto:
            self._messages, self._decisions, self._upto, self._sections = [], [], 0, {}
            self._ids = set()

    def normalized(
        self, items: Sequence[ContextItem]
    ) -> tuple[tuple[Message, ...], tuple[Decision, ...], dict[str, int]]:
        """The items' messages, pairing-normalized, their decisions and tokens per section."""
        boundary = len(items) - 1
        while boundary > self._upto and items[boundary].message.role == "tool":
            boundary -= 1
        if boundary > self._upto:
            done, decisions = normalize_pairing([i.message for i in items[self._upto : boundary]], used_ids=self._ids)
            self._messages.extend(done)
            self._decisions.extend(decisions)
            self._upto = boundary
            self._add_sections(self._sections, done)
        tail, tail_decisions = normalize_pairing([i.message for i in items[self._upto :]], used_ids=set(self._ids))
        sections = dict(self._sections)
        self._add_sections(sections, tail)
        return (*self._messages, *tail), (*self._decisions, *tail_decisions), sections

    def _add_sections(self, sections: dict[str, int], messages: Sequence[Message]) -> None:
        for m in messages:
            sections[m.section] = sections.get(m.section, 0) + (m.tokens or message_tokens(m, self.counter))


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """The size of the next request: counted, and anchored on the provider's last usage report."""

    tokens: int
    """The figure to compare with budgets: the anchored one when there is a usable report."""
    counted: int
    """Our own count (system, tools and every item)."""
    anchored: int | None = None
    """Last reported input + output, plus what the window gained (or lost) since; None without a report."""

    @property
    def source(self) -> str:
        """``usage`` when anchored on a provider report, else ``counter``."""
        return "usage" if self.anchored is not None else "counter"


def anchored_estimate(
    *,
    counted: int,
    window_tokens: int,
    usage: UsageReport | None,
    tokens_at_usage: int,
    window_opened_seq: int,
) -> Estimate:
    """The anchored estimate (``docs/behaviours.md``, row 8): the last real usage plus what came after it.

    ``window_tokens`` is the window's item total now and ``tokens_at_usage`` what it was when the
    report arrived (the report is recorded after its assistant message, so input + output is the
    context at that point). The stale-anchor floor: a report older than the window's compaction
    (``window_opened_seq``) described the context before it, so it is ignored and the estimate
    falls back to counting until a new report arrives.
    """
    if usage is None or usage.seq <= window_opened_seq or usage.input_tokens <= 0:
        return Estimate(tokens=counted, counted=counted)
    anchored = max(usage.input_tokens + usage.output_tokens + (window_tokens - tokens_at_usage), 0)
    return Estimate(tokens=anchored, counted=counted, anchored=anchored)
