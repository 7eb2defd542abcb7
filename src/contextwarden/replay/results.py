"""The figures a replay produces: per request, per file, per strategy, and their JSON form.

:class:`RequestRecord` holds one request's series point (what the report draws), :class:`FileResult`
one strategy on one transcript, :class:`StrategyResult` one strategy over every transcript with its
totals, :class:`ReplayResults` the whole run. ``to_dict()`` gives the ``--json`` document::

    {"files": [...], "strategies": [{"name": ..., <totals>, "per_file": [...]}], "counter": ..., "model": ...}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .probes import PROBE_KINDS, RETENTION_PROBES


@dataclass(frozen=True, kw_only=True)
class RequestRecord:
    """One request a strategy would have sent: its size, cache, cost, composition and probes."""

    index: int
    """0-based position among the transcript's requests."""
    at: float
    """Seconds since the first request (the cost model's clock)."""
    input_tokens: int
    """Tokens of the rendered request."""
    cache_read_tokens: int
    """Of those, read from the cache."""
    cache_write_tokens: int
    """Of those, written to the cache (explicit caching)."""
    output_tokens: int
    """Output tokens of the transcript's response."""
    cost_usd: float
    """Cache-adjusted cost of this request, summarizer calls made for it included."""
    messages: int
    """Rendered messages."""
    sections: dict[str, int]
    """Tokens per section (system, tools, instructions, pinned, summary, conversation, tool_output)."""
    window_event: bool
    """Whether the strategy changed earlier context for this request (a window event)."""
    window_event_kinds: tuple[str, ...] = ()
    """What it did (``context_edit``, ``compaction``, ``edit``)."""
    prefix_break: bool = False
    """Whether the request does not extend the previous one message for message."""
    shared_prefix_tokens: int = 0
    """Tokens of the longest prefix shared with a live earlier request."""
    summarizer_tokens: int = 0
    """Summarizer input plus output tokens spent for this request."""
    overflow: bool = False
    """Whether the request exceeds the model's input window."""
    probes: dict[str, bool] = field(default_factory=dict)
    """Probe kind → kept (applicable probes only)."""
    usage_input_tokens: int | None = None
    """The provider's reported input tokens for this call, when the transcript has them."""
    usage_cache_read_tokens: int | None = None
    """The provider's reported cache reads for this call, when the transcript has them."""
    usage_cache_write_tokens: int | None = None
    """The provider's reported cache writes for this call, when the transcript has them."""
    model: str = ""
    """The model this request was priced with."""


@dataclass(frozen=True, kw_only=True)
class UsageCheck:
    """The cost model's prediction for the raw strategy against the usage a transcript recorded."""

    requests: int
    """Requests with reported usage."""
    real_input_tokens: int
    """Reported input tokens over those requests (cached ones included)."""
    predicted_input_tokens: int
    """Our measured input tokens over the same requests (hidden prefix included)."""
    real_cache_read_tokens: int
    """Reported cache reads."""
    predicted_cache_read_tokens: int
    """Cache reads the model predicts."""
    real_cost_usd: float
    """The reported usage, each request priced with its own model."""
    predicted_cost_usd: float
    """The model's cost over the same requests."""
    real_cache_write_tokens: int = 0
    """Reported cache writes."""
    predicted_cache_write_tokens: int = 0
    """Cache writes the model predicts."""
    real_output_tokens: int = 0
    """Reported output tokens."""
    predicted_output_tokens: int = 0
    """Output tokens charged (the reported ones where a request has them, else counted)."""
    source: str = "per-call"
    """``per-call`` (usage events) or ``totals`` (only run totals in the transcript's metadata)."""
    models: tuple[str, ...] = ()
    """The models the requests were priced with."""
    left_out: int = 0
    """Requests with usage not compared: they follow a compaction the agent made, which raw does not replay."""

    @property
    def input_error(self) -> float:
        """(predicted − real) / real input tokens."""
        return _rel(self.predicted_input_tokens, self.real_input_tokens)

    @property
    def cache_read_error(self) -> float:
        """(predicted − real) / real cache reads."""
        return _rel(self.predicted_cache_read_tokens, self.real_cache_read_tokens)

    @property
    def cache_write_error(self) -> float:
        """(predicted − real) / real cache writes."""
        return _rel(self.predicted_cache_write_tokens, self.real_cache_write_tokens)

    @property
    def output_error(self) -> float:
        """(predicted − real) / real output tokens."""
        return _rel(self.predicted_output_tokens, self.real_output_tokens)

    @property
    def cost_error(self) -> float:
        """(predicted − real) / real cost."""
        return _rel(self.predicted_cost_usd, self.real_cost_usd)

    @staticmethod
    def total(checks: Sequence[UsageCheck]) -> UsageCheck | None:
        """The checks of several transcripts summed (None when there are none)."""
        if not checks:
            return None
        sources = {c.source for c in checks}
        summed = {
            name: sum(getattr(c, name) for c in checks)
            for name in (
                "requests",
                "real_input_tokens",
                "predicted_input_tokens",
                "real_cache_read_tokens",
                "predicted_cache_read_tokens",
                "real_cost_usd",
                "predicted_cost_usd",
                "real_cache_write_tokens",
                "predicted_cache_write_tokens",
                "real_output_tokens",
                "predicted_output_tokens",
                "left_out",
            )
        }
        return UsageCheck(
            **summed,
            source=sources.pop() if len(sources) == 1 else "mixed",
            models=tuple(sorted({m for c in checks for m in c.models})),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, errors included."""
        return {
            **asdict(self),
            "input_error": self.input_error,
            "cache_read_error": self.cache_read_error,
            "cache_write_error": self.cache_write_error,
            "output_error": self.output_error,
            "cost_error": self.cost_error,
        }


def _rel(predicted: float, real: float) -> float:
    return (predicted - real) / real if real else 0.0


@dataclass(frozen=True, kw_only=True)
class FileResult:
    """One strategy replayed on one transcript."""

    file: str
    """The transcript's path or session id."""
    name: str
    """A short name (the file stem)."""
    requests: tuple[RequestRecord, ...]
    """Every request, in order."""
    summarizer_tokens: int = 0
    """Summarizer input plus output tokens."""
    usage: UsageCheck | None = None
    """Prediction against the transcript's own usage, when it has some (raw strategy)."""
    probe_misses: dict[str, int] = field(default_factory=dict)
    """Probe kind → requests that missed it."""
    miss_examples: dict[str, str] = field(default_factory=dict)
    """Probe kind → what the first miss could not see."""
    optimum_cost_usd: float | None = None
    """The offline optimum's cost on this transcript (see ``optimum.py``)."""
    evidence_misses: tuple[str, ...] = ()
    """Each ``next_action_evidence`` miss: request, file, its read's seq, what was shown instead."""
    file_reads: int = 0
    """File reads by the transcript's actions that had an earlier current read."""
    rereads: int = 0
    """Of those, reads whose earlier current read this strategy did not show (reads it made necessary)."""
    note: str = ""
    """Anything the reader should know (a fallback, a skipped part)."""
    model: str = ""
    """The session's model (budgets the strategies; requests are priced by their own model)."""
    model_source: str = ""
    """Where the model came from: ``transcript``, ``--model`` or ``default``."""
    counter: dict[str, Any] = field(default_factory=dict)
    """The counter and its calibration (:meth:`~.reference.Calibration.to_dict`)."""
    hidden_prefix_tokens: int = 0
    """The estimated hidden prefix every request of this transcript carries."""
    hidden_prefix_method: str = ""
    """How it was estimated."""
    clock: str = ""
    """Which request times were used (the transcript's timestamps or the interval)."""
    cache_ttl: str = ""
    """The lifetime explicit cache writes were simulated with, and why (``--cache-ttl`` or the transcript's)."""

    def figures(self) -> dict[str, Any]:
        """The per-file figures of the ``--json`` document."""
        return {
            "file": self.file,
            "name": self.name,
            **_figures(self.requests, self.summarizer_tokens),
            "probe_misses": dict(self.probe_misses),
            "miss_examples": dict(self.miss_examples),
            "evidence_misses": list(self.evidence_misses),
            **_reread_figures(self.file_reads, self.rereads),
            "optimum_cost_usd": self.optimum_cost_usd,
            "optimum_ratio": _ratio(sum(r.cost_usd for r in self.requests), self.optimum_cost_usd),
            "usage_check": self.usage.to_dict() if self.usage else None,
            "model": self.model,
            "model_source": self.model_source,
            "counter": dict(self.counter),
            "hidden_prefix": {"tokens": self.hidden_prefix_tokens, "method": self.hidden_prefix_method},
            "request_times": self.clock,
            "cache_ttl": self.cache_ttl,
            "note": self.note,
        }


def _reread_figures(reads: int, rereads: int) -> dict[str, Any]:
    return {"file_reads": reads, "rereads": rereads, "reread_rate": rereads / reads if reads else 0.0}


def _ratio(value: float, base: float | None) -> float | None:
    return value / base if base else None


def _figures(requests: Sequence[RequestRecord], summarizer_tokens: int) -> dict[str, Any]:
    n = len(requests)
    total = sum(r.input_tokens for r in requests)
    read = sum(r.cache_read_tokens for r in requests)
    # Retention is over the fact probes; next-action evidence is its own figure (``probe_retention``).
    pairs = sum(1 for r in requests for k in r.probes if k in RETENTION_PROBES)
    kept = sum(1 for r in requests for k, v in r.probes.items() if v and k in RETENTION_PROBES)
    return {
        "requests": n,
        "input_tokens_total": total,
        "input_tokens_mean": total / n if n else 0.0,
        "input_tokens_peak": max((r.input_tokens for r in requests), default=0),
        "output_tokens_total": sum(r.output_tokens for r in requests),
        "cost_usd": sum(r.cost_usd for r in requests),
        "cache_hit_ratio": read / total if total else 0.0,
        "cache_read_tokens": read,
        "cache_write_tokens": sum(r.cache_write_tokens for r in requests),
        "prefix_breaks": sum(1 for r in requests if r.prefix_break),
        "window_events": sum(1 for r in requests if r.window_event),
        "summarizer_tokens": summarizer_tokens,
        "retention": kept / pairs if pairs else 1.0,
        "probe_retention": _probe_retention(requests),
        "overflows": sum(1 for r in requests if r.overflow),
    }


def _probe_retention(requests: Sequence[RequestRecord]) -> dict[str, float]:
    """Probe kind → share of the requests it applied to that kept it."""
    applied: dict[str, int] = {}
    kept: dict[str, int] = {}
    for r in requests:
        for kind, ok in r.probes.items():
            applied[kind] = applied.get(kind, 0) + 1
            kept[kind] = kept.get(kind, 0) + ok
    return {kind: kept[kind] / applied[kind] for kind in PROBE_KINDS if applied.get(kind)}


@dataclass(frozen=True, kw_only=True)
class StrategyResult:
    """One strategy over every transcript."""

    name: str
    """The strategy's name as given (``raw``, ``mask-last-n:10``, ``contextwarden:keep=3``...)."""
    per_file: tuple[FileResult, ...] = ()
    """One result per transcript, in input order."""
    skipped: str = ""
    """Why the strategy did not run (a peer whose package is missing), empty when it ran."""

    def figures(self) -> dict[str, Any]:
        """Totals over every file (means and ratios over all requests together)."""
        requests = [r for f in self.per_file for r in f.requests]
        out = _figures(requests, sum(f.summarizer_tokens for f in self.per_file))
        misses = {k: sum(f.probe_misses.get(k, 0) for f in self.per_file) for k in PROBE_KINDS}
        optimum = [f.optimum_cost_usd for f in self.per_file]
        known = None if any(o is None for o in optimum) else sum(o or 0.0 for o in optimum)
        out.update(probe_misses=misses, optimum_cost_usd=known, optimum_ratio=_ratio(out["cost_usd"], known))
        out.update(_reread_figures(sum(f.file_reads for f in self.per_file), sum(f.rereads for f in self.per_file)))
        total = UsageCheck.total([f.usage for f in self.per_file if f.usage is not None])
        out["usage_check"] = total.to_dict() if total is not None else None
        return out

    def to_dict(self) -> dict[str, Any]:
        """The strategy's entry of the ``--json`` document."""
        if self.skipped:
            return {"name": self.name, "skipped": self.skipped, "per_file": []}
        return {"name": self.name, **self.figures(), "per_file": [f.figures() for f in self.per_file]}


@dataclass(frozen=True, kw_only=True)
class ReplayResults:
    """A whole replay: every strategy on every transcript."""

    files: tuple[str, ...]
    """The transcripts replayed, in order."""
    strategies: tuple[StrategyResult, ...]
    """One entry per strategy, in the order asked."""
    counter: str
    """The token counter used (``o200k_base`` exact, or ``heuristic``)."""
    counter_exact: bool
    """Whether the counter is exact (for OpenAI's tokenizer; see ``counter_label``)."""
    model: str
    """The session models of the transcripts, comma-separated."""
    cache_style: str
    """Their cache mechanics (``openai-auto``, ``anthropic-breakpoints``...), comma-separated."""
    counter_label: str = ""
    """How tokens were counted, honestly (exact, calibrated to a provider with its spread, or estimated)."""
    settings: dict[str, Any] = field(default_factory=dict)
    """The replay settings (interval, cache lifetime...)."""
    notes: tuple[str, ...] = ()
    """Anything skipped or approximated, one sentence each."""

    def strategy(self, name: str) -> StrategyResult:
        """The result of the strategy called ``name`` (KeyError when absent)."""
        for s in self.strategies:
            if s.name == name:
                return s
        raise KeyError(name)

    def to_dict(self, *, per_request: bool = False) -> dict[str, Any]:
        """The ``--json`` document; ``per_request`` adds every request's record under each file."""
        strategies = []
        for s in self.strategies:
            entry = s.to_dict()
            if per_request:
                for f, fd in zip(s.per_file, entry["per_file"], strict=True):
                    fd["per_request"] = [asdict(r) for r in f.requests]
            strategies.append(entry)
        return {
            "files": list(self.files),
            "strategies": strategies,
            "counter": self.counter,
            "counter_exact": self.counter_exact,
            "counter_label": self.counter_label,
            "model": self.model,
            "cache_style": self.cache_style,
            "settings": dict(self.settings),
            "notes": list(self.notes),
        }
