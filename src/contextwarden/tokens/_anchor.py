"""How big is the context now? Usage anchoring, and per-session calibration from usage.

The provider's own count of the last request is the best number there is. So a context's size is
the last :class:`~contextwarden.events.UsageReport` of the current window (its ``input_tokens``
plus its ``output_tokens``, which stand for the response the model just wrote) plus an estimate
of only what was appended after that response. ``UsageReport.input_tokens`` is defined as the
*total* input, cached tokens included (see ``events.py``), so cache reads and writes are never
added on top; importers of providers that report them separately (Anthropic) add them in.

A report from before the latest window event (compaction, context edit, tool-set change)
describes a context that no longer exists and is ignored; until a new report arrives the estimate
counts what the window shows: the latest compaction's summary, the events it kept, everything
after it, and context-edit replacements instead of the events they masked. Seed 000 (Ink's
``estimateContextTokens`` with its ``estimateFloor``) describes the same rule.

Note what events do not carry: tool schemas and any system text not recorded as an event. An
anchored estimate includes them (the provider counted them); an unanchored one does not, so
callers add their own count of those.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ..events import (
    AssistantMessage,
    Compaction,
    ContextEdit,
    ContextEditBatch,
    Event,
    SettingChange,
    UsageReport,
)
from ._cache import MESSAGE_OVERHEAD, EventTokenCache, event_tokens
from ._calibrated import CalibratedCounter
from ._protocol import TokenCounter

__all__ = ["ContextEstimate", "calibrate_from_events", "estimate_context_tokens"]


@dataclass(frozen=True, kw_only=True)
class ContextEstimate:
    """The estimated size of a context and how it was reached."""

    tokens: int
    """The estimate: ``anchor_tokens + tail_tokens``."""
    anchor_tokens: int
    """Provider-reported tokens the estimate starts from (input plus output); 0 when unanchored."""
    anchor_event_id: str
    """The id of the usage report used as anchor, or ``""``."""
    anchor_seq: int
    """The anchor's seq in its session (0 when unanchored or not stored)."""
    tail_tokens: int
    """Estimated tokens of the events the anchor does not cover (all visible events when unanchored)."""
    tail_events: int
    """How many events the tail estimate looked at."""
    counter: str
    """The name of the counter that estimated the tail."""

    @property
    def anchored(self) -> bool:
        """Whether a provider usage report anchors the estimate."""
        return bool(self.anchor_event_id)


def _latest_window_index(events: Sequence[Event], end: int) -> int:
    """Index of the last window event before ``end``, or -1."""
    for i in range(end - 1, -1, -1):
        if events[i].is_window_event:
            return i
    return -1


def _response_index(events: Sequence[Event], usage_index: int, floor: int) -> int:
    """Where the request a usage report measured ends: the index of its response event.

    The report's ``response_event_id`` when it is in ``events`` after ``floor``; otherwise the last
    assistant message between ``floor`` and the report; otherwise the report itself.
    """
    usage = events[usage_index]
    assert isinstance(usage, UsageReport)
    if usage.response_event_id:
        for i in range(len(events) - 1, floor, -1):
            if events[i].id == usage.response_event_id:
                return i
    for i in range(usage_index - 1, floor, -1):
        if isinstance(events[i], AssistantMessage):
            return i
    return usage_index


def _edited_tokens(event: Event, edit: ContextEdit, counter: TokenCounter) -> int:
    """Tokens of an event as a context edit leaves it visible."""
    if edit.action == "drop_thinking" and isinstance(event, AssistantMessage):
        without = event_tokens(dataclasses.replace(event, thinking=()), counter)
        return without + (counter.count(edit.replacement) if edit.replacement else 0)
    return MESSAGE_OVERHEAD + counter.count(edit.replacement)


def _unanchored(events: Sequence[Event], counter: TokenCounter, cache: EventTokenCache) -> tuple[int, int]:
    """(tokens, events looked at) of what the current window shows, without any usage report."""
    compaction = max((i for i, e in enumerate(events) if isinstance(e, Compaction)), default=-1)
    if compaction >= 0:
        first_kept = events[compaction]
        assert isinstance(first_kept, Compaction)
        # Unstored events (seq 0) cannot be placed against first_kept_seq: count them, erring high.
        kept = [e for e in events[:compaction] if e.seq == 0 or e.seq >= first_kept.first_kept_seq]
        visible = [*kept, *events[compaction:]]
    else:
        visible = list(events)
    edits = {edit.target_id: edit for batch in visible if isinstance(batch, ContextEditBatch) for edit in batch.edits}
    total = 0
    for event in visible:
        edit = edits.get(event.id)
        total += _edited_tokens(event, edit, counter) if edit else cache.tokens(event, counter)
    return total, len(visible)


def estimate_context_tokens(
    events: Sequence[Event], counter: TokenCounter, *, cache: EventTokenCache | None = None
) -> ContextEstimate:
    """Estimate the tokens of the context ``events`` make, anchored on the latest usage report.

    ``events`` is the session log in order (the whole log or the part from the latest window
    event on; older events are only needed when a compaction kept some of them). Pass the same
    ``cache`` on every call of a session so no event is counted twice.
    """
    cache = cache if cache is not None else EventTokenCache()
    window = _latest_window_index(events, len(events))
    usage_index = next((i for i in range(len(events) - 1, window, -1) if isinstance(events[i], UsageReport)), -1)
    if usage_index < 0:
        tokens, looked_at = _unanchored(events, counter, cache)
        return ContextEstimate(
            tokens=tokens,
            anchor_tokens=0,
            anchor_event_id="",
            anchor_seq=0,
            tail_tokens=tokens,
            tail_events=looked_at,
            counter=counter.name,
        )
    usage = events[usage_index]
    assert isinstance(usage, UsageReport)
    response = _response_index(events, usage_index, window)
    # With its response event located, the anchor covers the response too, measured by the
    # provider as output tokens; without one, only the input the provider counted.
    anchor = usage.input_tokens + (usage.output_tokens if response != usage_index else 0)
    tail = events[response + 1 :]
    tail_tokens = sum(cache.tokens(e, counter) for e in tail)
    return ContextEstimate(
        tokens=anchor + tail_tokens,
        anchor_tokens=anchor,
        anchor_event_id=usage.id,
        anchor_seq=usage.seq,
        tail_tokens=tail_tokens,
        tail_events=len(tail),
        counter=counter.name,
    )


def _delta_tokens(events: Sequence[Event], counter: TokenCounter, cache: EventTokenCache) -> int:
    """Estimated tokens of events appended between two requests, as the second request resends them.

    Reasoning is left out: providers drop earlier turns' thinking from later requests (OpenAI
    reasoning items, Anthropic thinking outside the current tool loop), and counting it would
    teach the calibration to under-count everything else.
    """
    total = 0
    for event in events:
        if isinstance(event, AssistantMessage) and event.thinking:
            total += event_tokens(dataclasses.replace(event, thinking=()), counter)
        else:
            total += cache.tokens(event, counter)
    return total


def _breaks_calibration(event: Event) -> bool:
    """Whether the context or the tokenizer changes at ``event`` (a pair across it compares nothing)."""
    return event.is_window_event or (isinstance(event, SettingChange) and bool(event.model))


def calibrate_from_events(
    events: Sequence[Event],
    counter: TokenCounter,
    *,
    cache: EventTokenCache | None = None,
) -> CalibratedCounter:
    """Learn a per-session factor for ``counter`` from the usage reports in ``events``.

    Pairs are *increments*: between two consecutive requests the provider's input grows by what was
    appended in between, and ``counter`` estimates those same events. Constant parts (system
    prompt, tool schemas) cancel out. Pairs across a window event or a model change are skipped.
    Returns a new :class:`CalibratedCounter` over ``counter`` (over its base when it is already
    calibrated), with one observation per usable pair, oldest first.
    """
    base = counter.base if isinstance(counter, CalibratedCounter) else counter
    calibrated = CalibratedCounter(base)
    cache = cache if cache is not None else EventTokenCache()
    previous: tuple[int, int] | None = None  # (response index, input tokens) of the last request
    for i, event in enumerate(events):
        if not isinstance(event, UsageReport):
            continue
        floor = _latest_window_index(events, i)
        response = _response_index(events, i, floor)
        if previous is not None and previous[0] < response:
            between = events[previous[0] : response]
            if not any(_breaks_calibration(e) for e in between):
                calibrated.observe(_delta_tokens(between, base, cache), event.input_tokens - previous[1])
        previous = (response, event.input_tokens)
    return calibrated
