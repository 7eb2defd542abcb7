"""Per-session context metrics: re-read rate, cache hit ratio, tokens by section and tool, compactions.

- **re-read rate** (``docs/behaviours.md``, row 39): re-reads of evicted content per eviction
  (:class:`~contextwarden.assemble.retrieval.ReReadTracker`); a high rate means retention is too aggressive;
- **cache hit ratio**: cached input over total input, from the provider's usage reports when the
  log has them, else simulated: each request's prefix shared with the previous request counts as
  cached when it reaches the model's minimum cacheable length (rounded down to its granularity);
- **tokens by section** (system, tools, instructions, pinned, summary, conversation, tool_output)
  and **by tool**, summed over every request (what the provider reads) and for the last request;
- **compactions** and their cost: the summarizer's tokens, and the prefix each one made the
  provider read again at full price.

:func:`session_metrics` measures the requests a fresh manager builds for a stored session (see
:func:`~contextwarden.governance.session.replay_session`); :func:`request_metrics` measures a
foreign request log.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..assemble.manager import ContextPolicy
from ..assemble.retrieval import ReReadTracker
from ..log.events import Compaction, ContextEditBatch, UsageReport
from ..log.store import SessionStore
from ..models import ModelProfile, get_profile
from ..tokens import TokenCounter, best_counter
from ._contexts import request_from_context
from ._diff import shared_prefix_tokens
from .requests import BadLine, Request, RequestUsage
from .session import replay_session


@dataclass(frozen=True, kw_only=True)
class CompactionCost:
    """What the compactions of a session cost."""

    count: int = 0
    """Compactions."""
    summarizer_input_tokens: int = 0
    """Tokens the summarizer read (0 for the structured summarizer: no model)."""
    summarizer_output_tokens: int = 0
    """Tokens the summarizer wrote."""
    tokens_removed: int = 0
    """Context tokens taken out (before minus after, summed)."""
    prefix_rewritten_tokens: int = 0
    """Tokens of the first request after each compaction that no cache could serve."""


@dataclass(frozen=True, kw_only=True)
class SessionMetrics:
    """The figures of one session (or one request log)."""

    source: str
    """What was measured."""
    requests: int
    """Model requests."""
    input_tokens: int
    """Input tokens summed over every request."""
    re_reads: int
    """Re-reads of evicted content."""
    evictions: int
    """Tool results masked or cleared."""
    cache_hit_ratio: float
    """Cached input over total input."""
    cache_source: Literal["usage", "simulated"]
    """Where the ratio comes from."""
    tokens_by_section: dict[str, int] = field(default_factory=dict)
    """Tokens per section, summed over every request."""
    last_request_sections: dict[str, int] = field(default_factory=dict)
    """Tokens per section of the last request."""
    tokens_by_tool: dict[str, int] = field(default_factory=dict)
    """Tool output tokens per tool, summed over every request."""
    context_edits: int = 0
    """Context-edit batches recorded."""
    edit_tokens_saved: int = 0
    """Tokens those batches took out (at the time of each)."""
    compactions: CompactionCost = field(default_factory=CompactionCost)
    """Compactions and their cost."""

    @property
    def re_read_rate(self) -> float:
        """Re-reads per eviction (0.0 without evictions)."""
        return self.re_reads / self.evictions if self.evictions else 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "source": self.source,
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "re_reads": self.re_reads,
            "evictions": self.evictions,
            "re_read_rate": self.re_read_rate,
            "cache_hit_ratio": self.cache_hit_ratio,
            "cache_source": self.cache_source,
            "tokens_by_section": self.tokens_by_section,
            "last_request_sections": self.last_request_sections,
            "tokens_by_tool": self.tokens_by_tool,
            "context_edits": self.context_edits,
            "edit_tokens_saved": self.edit_tokens_saved,
            "compactions": vars(self.compactions).copy(),
        }


def cacheable(shared: int, profile: ModelProfile) -> int:
    """Tokens of a shared prefix a provider would actually serve from its cache."""
    if profile.cache_style == "none" or shared < max(profile.min_cacheable_tokens, 1):
        return 0
    step = max(profile.cache_granularity, 1)
    return shared - shared % step


class _Tally:
    def __init__(self) -> None:
        self.requests = 0
        self.input = 0
        self.simulated_cached = 0
        self.sections: dict[str, int] = {}
        self.tools: dict[str, int] = {}
        self.last_sections: dict[str, int] = {}
        self.usage_input = 0
        self.usage_cached = 0
        self.usage_seen = 0
        self.prev: Request | None = None

    def request(self, request: Request, profile: ModelProfile) -> int:
        self.requests += 1
        total = request.total_tokens
        self.input += total
        shared = shared_prefix_tokens(self.prev, request) if self.prev is not None else 0
        self.simulated_cached += cacheable(shared, profile)
        for item in request.messages:
            if item.role == "tool":
                name = item.kind.removeprefix("tool_output:") or "(unknown)"
                self.tools[name] = self.tools.get(name, 0) + item.tokens
        if request.usage is not None:
            self.usage(request.usage.input_tokens, request.usage.cache_read_tokens)
        self.prev = request
        return total - shared

    def usage(self, total: int, cached: int) -> None:
        self.usage_seen += 1
        self.usage_input += total
        self.usage_cached += cached

    def sections_of(self, sections: dict[str, int]) -> None:
        self.last_sections = dict(sections)
        for name, tokens in sections.items():
            self.sections[name] = self.sections.get(name, 0) + tokens

    def ratio(self) -> tuple[float, Literal["usage", "simulated"]]:
        if self.usage_seen and self.usage_input:
            return self.usage_cached / self.usage_input, "usage"
        return (self.simulated_cached / self.input if self.input else 0.0), "simulated"


def request_metrics(
    requests: Iterable[Request | BadLine], *, source: str = "", model: str | None = None
) -> SessionMetrics:
    """Metrics of a foreign request log (no re-reads or compactions are known there)."""
    tally = _Tally()
    for request in requests:
        if isinstance(request, Request):
            tally.request(request, get_profile(model or request.model or "gpt-4o"))
            sections: dict[str, int] = {
                "system": sum(i.tokens for i in request.system),
                "tools": sum(i.tokens for i in request.tools),
            }
            for item in request.messages:
                key = "tool_output" if item.role == "tool" else "conversation"
                sections[key] = sections.get(key, 0) + item.tokens
            tally.sections_of(sections)
    ratio, origin = tally.ratio()
    return SessionMetrics(
        source=source,
        requests=tally.requests,
        input_tokens=tally.input,
        re_reads=0,
        evictions=0,
        cache_hit_ratio=ratio,
        cache_source=origin,
        tokens_by_section=tally.sections,
        last_request_sections=tally.last_sections,
        tokens_by_tool=tally.tools,
    )


def session_metrics(
    store: SessionStore,
    session_id: str,
    *,
    model: str | None = None,
    policy: ContextPolicy | None = None,
    counter: TokenCounter | None = None,
) -> SessionMetrics:
    """Metrics of the requests a fresh manager builds for a stored session."""
    counter = counter or best_counter()
    policy = policy or ContextPolicy()
    tally = _Tally()
    tracker = ReReadTracker(policies=policy.tool_policies)
    edits = saved = 0
    cost = {
        "count": 0,
        "summarizer_input_tokens": 0,
        "summarizer_output_tokens": 0,
        "tokens_removed": 0,
        "prefix_rewritten_tokens": 0,
    }
    for turn in replay_session(store, session_id, model=model, policy=policy, counter=counter):
        compacted = False
        for event in turn.new_events:
            tracker.observe(event)
            if isinstance(event, ContextEditBatch):
                edits += 1
                saved += max(event.tokens_before - event.tokens_after, 0)
            elif isinstance(event, Compaction):
                compacted = True
                cost["count"] += 1
                cost["summarizer_input_tokens"] += event.summarizer_input_tokens
                cost["summarizer_output_tokens"] += event.summarizer_output_tokens
                cost["tokens_removed"] += max(event.tokens_before - event.tokens_after, 0)
        if turn.context is None:
            continue
        request = request_from_context(turn.context, number=turn.turn, counter=counter)
        if turn.usage is not None:
            request = _with_usage(request, turn.usage)
        uncached = tally.request(request, turn.profile or get_profile(turn.context.model))
        if compacted:
            cost["prefix_rewritten_tokens"] += uncached
        tally.sections_of(turn.context.sections)
    ratio, origin = tally.ratio()
    return SessionMetrics(
        source=f"session {session_id}",
        requests=tally.requests,
        input_tokens=tally.input,
        re_reads=tracker.re_reads,
        evictions=tracker.evictions,
        cache_hit_ratio=ratio,
        cache_source=origin,
        tokens_by_section=tally.sections,
        last_request_sections=tally.last_sections,
        tokens_by_tool=tally.tools,
        context_edits=edits,
        edit_tokens_saved=saved,
        compactions=CompactionCost(**cost),
    )


def _with_usage(request: Request, usage: UsageReport) -> Request:
    return replace(
        request,
        usage=RequestUsage(
            input_tokens=usage.input_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            output_tokens=usage.output_tokens,
        ),
    )
