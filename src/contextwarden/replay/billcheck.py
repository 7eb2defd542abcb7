"""The bill check: the raw strategy's prediction against the usage a transcript recorded.

Per call where the transcript has usage events (each request priced with its own model, 1-hour
cache writes at their own price), else against run totals (compared uncached, with the run's
recorded cost as the bill when it has one). Requests after a compaction the agent itself made are
left out: the raw strategy sends the whole history there, not what the agent sent.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..log.events import UsageReport
from ..models import ModelProfile
from .costmodel import price_call
from .inputs import ReplayInput
from .reference import Reference
from .results import RequestRecord, UsageCheck
from .settings import ReplaySettings


def _real_cost(u: UsageReport, profile: ModelProfile) -> float:
    one_hour = min(u.cache_write_1h_tokens, u.cache_write_tokens)
    return (
        profile.cost(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_read_tokens=u.cache_read_tokens,
            cache_write_tokens=u.cache_write_tokens - one_hour,
            cache_write_1h_tokens=one_hour,
        )
        or 0.0
    )


def usage_check(inp: ReplayInput, records: Sequence[RequestRecord], reference: Reference) -> UsageCheck | None:
    """The raw strategy's prediction against the transcript's own usage (per call, else run totals)."""
    usage = reference.usage
    if usage:
        # After the agent's own compaction the raw strategy no longer sends what the agent sent.
        end = min(len(records), reference.own_window_event_at)
        pairs = [(records[i], u, reference.profile_of(i)) for i, u in sorted(usage.items()) if i < end]
        return UsageCheck(
            left_out=sum(1 for i in usage if i >= end),
            requests=len(pairs),
            real_input_tokens=sum(u.input_tokens for _, u, _ in pairs),
            predicted_input_tokens=sum(r.input_tokens for r, _, _ in pairs),
            real_cache_read_tokens=sum(u.cache_read_tokens for _, u, _ in pairs),
            predicted_cache_read_tokens=sum(r.cache_read_tokens for r, _, _ in pairs),
            real_cache_write_tokens=sum(u.cache_write_tokens for _, u, _ in pairs),
            predicted_cache_write_tokens=sum(r.cache_write_tokens for r, _, _ in pairs),
            real_output_tokens=sum(u.output_tokens for _, u, _ in pairs),
            predicted_output_tokens=sum(r.output_tokens for r, _, _ in pairs),
            real_cost_usd=sum(_real_cost(u, p) for _, u, p in pairs),
            predicted_cost_usd=sum(r.cost_usd for r, _, _ in pairs),
            models=tuple(sorted({p.name for _, _, p in pairs})),
        )
    totals = inp.metadata.get("usage_totals")
    if not isinstance(totals, dict) or not isinstance(totals.get("input_tokens"), int):
        return None
    real_in, real_out = int(totals["input_tokens"] or 0), int(totals.get("output_tokens") or 0)  # type: ignore[arg-type]
    predicted_in = sum(r.input_tokens for r in records)
    predicted_out = sum(r.output_tokens for r in records)
    profile = reference.profile
    recorded = totals.get("cost_usd")
    # Run totals carry no cache figures: compare both sides uncached. The bill is the recorded cost
    # when the transcript has one (it does not depend on which profile we price with).
    real_cost = (
        float(recorded)
        if isinstance(recorded, (int, float)) and recorded > 0
        else price_call(profile, input_tokens=real_in, output_tokens=real_out)
    )
    return UsageCheck(
        requests=len(records),
        real_input_tokens=real_in,
        predicted_input_tokens=predicted_in,
        real_cache_read_tokens=0,
        predicted_cache_read_tokens=0,
        real_output_tokens=real_out,
        predicted_output_tokens=predicted_out,
        real_cost_usd=real_cost,
        predicted_cost_usd=price_call(profile, input_tokens=predicted_in, output_tokens=predicted_out),
        source="totals",
        models=(profile.name,),
    )


def ttl_label(settings: ReplaySettings, reference: Reference) -> str:
    """Which lifetime explicit cache writes were simulated with, and why."""
    if settings.cache_ttl:
        return f"{settings.cache_ttl} (--cache-ttl)"
    if reference.cache_ttl == "1h":
        return "1h (the transcript's usage reports mostly 1-hour writes)"
    return "5m"
