"""Per-session calibration of a counter from the provider's usage reports.

The provider's own count of a request is the best number there is. Between two consecutive
requests its input grows by what was appended in between, so each such pair tells how far our
counter is off for this session. ``UsageReport.input_tokens`` is the *total* input, cached
tokens included (see ``events.py``). The size of the next request, anchored on the last report
(``docs/behaviours.md``, row 8), is :func:`contextwarden.window.accounting.anchored_estimate`, on the build path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..log.events import (
    AssistantMessage,
    Event,
    SettingChange,
    UsageReport,
)
from ._cache import EventTokenCache, event_tokens
from ._calibrated import CalibratedCounter
from ._protocol import TokenCounter

__all__ = ["calibrate_from_events"]


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
