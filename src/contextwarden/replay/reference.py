"""What a transcript records about its real requests: the model of each, provider usage, times.

A replay prices the requests a strategy would have sent, so it is only believable where it
reproduces what the provider really billed for the requests the agent did send. This module reads
the reference from the transcript itself, once per transcript, before any strategy runs:

- **Models.** Each request is priced with the model that answered it (the assistant message's
  model, else its usage report's), so a session that switches models is priced per request. The
  session's model (the first one named) budgets every strategy. ``--model`` overrides both. A name
  with no profile is an error that lists the known ones; a transcript that names no model at all is
  priced as :data:`~contextwarden.replay.engine.DEFAULT_MODEL` and the report says so.
- **Usage.** Each :class:`~contextwarden.log.events.UsageReport` is matched to its request.
- **Calibration.** The local counter (o200k) is not the provider's tokenizer for Claude. Between
  two consecutive requests with usage, the provider's input grows by exactly what the transcript
  shows was appended (the hidden parts are constant), so each pair gives one ratio of provider to
  local tokens. The session's factor is their token-weighted mean, with the lowest and highest pair
  as its spread; every strategy counts (and budgets) with it. When the counter is the model's own
  tokenizer, or no pair exists, the factor is 1 and the label says which.
- **Hidden prefix.** What the agent sent that the transcript does not show (its system prompt,
  its tool schemas): the first usage report's billed input minus the calibrated count of the
  visible request it belongs to. It is carried as a labelled block (two with a warm start, below)
  at the start of every simulated request, ending at a cache breakpoint as agents mark their system
  prompt, so raw and every strategy pay for it, and cache it, alike.
- **Warm start.** An agent's system prompt and tool schemas are the same from one session to the
  next, so a session often begins with them already cached (Claude Code's and Codex's first
  requests read thousands of tokens). The first usage report's cache reads, up to the hidden
  prefix's size, are taken as cached before the session: the hidden prefix is carried as two blocks,
  the warm part first, and every simulated cache of the first request's model starts holding it.
- **Cache lifetime.** Anthropic usage says which lifetime each write had (``cache_creation``): when
  most written tokens had the 1-hour lifetime, the replay writes its breakpoints with it (2x input
  instead of 1.25x), unless ``--cache-ttl`` says otherwise.
- **Re-sent reasoning.** Responses API reasoning items the agent sends back are billed as input
  within their turn, at the reasoning tokens their response reported (:mod:`.reasoning`).
- **Output.** Where a request's usage reports output tokens, every strategy is charged those (the
  response is the transcript's, whatever the strategy sent); elsewhere the visible response is counted.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import UsageError
from ..log.events import AssistantMessage, Event, JSONValue, UsageReport
from ..models import ModelProfile, get_profile, list_profiles
from ..tokens import CalibratedCounter, TokenCounter
from ..wire.openai_chat import render_openai_chat
from ._measure import align
from .costmodel import IMPLICIT_HIT_SHARE, Block, BlockMeter, CacheSimulator, CacheTTL, CostSettings
from .reasoning import TurnReasoning, resent_reasoning
from .strategies import History, plain_context

PLAUSIBLE_FACTOR = (0.8, 1.6)
"""Provider tokens per o200k token a tokenizer can explain (the real OpenHands streams give 1.13 and 1.24
for Claude); a factor outside means the requests grew by more than the transcript shows, and the label says so."""
MIN_PAIR_TOKENS = 32
"""A calibration pair whose local growth is smaller than this is skipped: framing dominates it."""
NO_WINDOW_EVENT = 1 << 62
"""``own_window_event_at`` of a transcript whose agent never compacted."""
_NOT_A_MODEL = frozenset({"", "<synthetic>"})
"""Model names that mark a response no model produced (Claude Code's synthetic messages)."""


def resolve_model(name: str, where: str) -> ModelProfile:
    """The profile of ``name``; an error naming every known profile when there is none."""
    profile = get_profile(name)
    if not profile.known:
        known = ", ".join(p.name for p in list_profiles() if p.name != "generic")
        raise UsageError(f"{where}: model {name!r} has no price profile; known: {known} (or pass --model NAME)")
    return profile


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """How local counts are scaled to the provider's tokenizer for one transcript."""

    counter: str
    """The local counter's name (``o200k_base``, ``heuristic``)."""
    tokenizer: str
    """The model's own tokenizer family (``claude``, ``o200k_base``...)."""
    factor: float = 1.0
    """Provider tokens per local token."""
    low: float = 1.0
    """The lowest ratio among the pairs."""
    high: float = 1.0
    """The highest ratio among the pairs."""
    pairs: int = 0
    """Usage increments the factor was learnt from."""

    @property
    def label(self) -> str:
        """How the counts were made, honestly: exact, calibrated (with its spread) or uncalibrated."""
        if self.counter == self.tokenizer:
            return f"{self.counter} (the model's own tokenizer)"
        if self.pairs:
            label = (
                f"{self.counter} x {self.factor:.3f} calibrated to {self.tokenizer} usage "
                f"({self.pairs} increment(s), spread {self.low:.3f}-{self.high:.3f})"
            )
            low, high = PLAUSIBLE_FACTOR
            if not low <= self.factor <= high:
                label += (
                    f"; outside {low:g}-{high:g}, more than a tokenizer explains: the billed requests grew by "
                    "content the transcript does not show, and the factor absorbs it"
                )
            return label
        return f"{self.counter}, uncalibrated estimate of {self.tokenizer} (no usage increments to learn from)"

    def to_dict(self) -> dict[str, JSONValue]:
        """JSON-ready, label included."""
        return {
            "counter": self.counter,
            "tokenizer": self.tokenizer,
            "factor": self.factor,
            "low": self.low,
            "high": self.high,
            "pairs": self.pairs,
            "label": self.label,
        }


@dataclass(frozen=True, kw_only=True)
class HiddenPrefix:
    """The estimated part of every request the transcript does not show."""

    tokens: int = 0
    """Provider tokens (0 when nothing is hidden or there is no usage to estimate from)."""
    warm_tokens: int = 0
    """Of those, already cached when the session began (the first request read them)."""
    method: str = "no per-request usage: nothing hidden is assumed"
    """How it was estimated, one sentence."""

    def blocks(self) -> list[Block]:
        """The blocks every simulated request starts with: the warm part, then the rest (empty when nothing)."""
        warm = min(self.warm_tokens, self.tokens)
        out = [Block(key=f"hidden-prefix-warm:{warm}", tokens=warm)] if warm > 0 else []
        if self.tokens > warm:
            out.append(Block(key=f"hidden-prefix:{self.tokens}", tokens=self.tokens - warm))
        return out


@dataclass(frozen=True, kw_only=True)
class Reference:
    """Everything a replay takes from one transcript's own record of its requests."""

    profile: ModelProfile
    """The session's model: budgets every strategy (and prices requests without a model)."""
    request_profiles: tuple[ModelProfile, ...]
    """The model each request is priced with, in request order."""
    usage: Mapping[int, UsageReport] = field(default_factory=dict)
    """Request index → the provider's usage for it."""
    calibration: Calibration
    """How local counts are scaled."""
    hidden_prefix: HiddenPrefix = field(default_factory=HiddenPrefix)
    """The hidden part of every request."""
    model_source: str = "transcript"
    """``transcript``, ``--model`` or ``default`` (the transcript names no model)."""
    cache_ttl: CacheTTL = "5m"
    """The lifetime the transcript's own cache writes mostly had (``1h`` only from Anthropic's ``cache_creation``)."""
    own_window_event_at: int = NO_WINDOW_EVENT
    """The first request after a window event the agent itself made (a compaction)."""
    reasoning: Mapping[str, int] = field(default_factory=dict)
    """Response id → the reasoning tokens the later requests of its turn are billed for (see :mod:`.reasoning`)."""
    resets: Mapping[int, int] = field(default_factory=dict)
    """Request index → the tokens it really read, where the provider lost the cache (see :func:`cache_resets`)."""

    def simulator(self, profile: ModelProfile, ttl: CacheTTL | None, *, at: float) -> CacheSimulator:
        """A fresh cache for ``profile`` (``ttl`` None: the transcript's own), warm if the session began warm.

        Only the first request's model starts warm: that is the cache the first usage report read.
        """
        sim = CacheSimulator(profile, CostSettings(ttl=ttl or self.cache_ttl))
        warm = self.hidden_prefix.blocks()[:1] if self.hidden_prefix.warm_tokens else []
        if warm and self.usage and profile.name == self.profile_of(min(self.usage)).name:
            sim.seed(warm, at=at)
        return sim

    def counter(self, base: TokenCounter) -> TokenCounter:
        """The counter the strategies and the cost model use for this transcript."""
        if self.calibration.pairs and self.calibration.factor != 1.0:
            return CalibratedCounter(base, factor=self.calibration.factor, min_factor=0.1, max_factor=10.0)
        return base

    def output_tokens(self, index: int, counted: int) -> int:
        """The output tokens of request ``index``: the provider's figure when reported, else ``counted``."""
        u = self.usage.get(index)
        return u.output_tokens if u is not None and u.output_tokens > 0 else counted

    def profile_of(self, index: int) -> ModelProfile:
        """The model request ``index`` is priced with."""
        return self.request_profiles[index] if index < len(self.request_profiles) else self.profile


def _requests_and_usage(events: Sequence[Event]) -> tuple[list[AssistantMessage], dict[int, UsageReport], int]:
    """The requests, their usage by request index, and the first request after the agent's own window event."""
    requests: list[AssistantMessage] = []
    index_of: dict[str, int] = {}
    usage: dict[int, UsageReport] = {}
    window_at = NO_WINDOW_EVENT
    for event in events:
        if event.is_window_event:
            window_at = min(window_at, len(requests))
            continue
        if isinstance(event, AssistantMessage):
            index_of[event.id] = len(requests)
            requests.append(event)
        elif isinstance(event, UsageReport) and requests:
            usage.setdefault(index_of.get(event.response_event_id, len(requests) - 1), event)
    return requests, usage, window_at


def _session_model(metadata: Mapping[str, JSONValue], requests: Sequence[AssistantMessage]) -> str:
    named = metadata.get("model")
    if isinstance(named, str) and named not in _NOT_A_MODEL:
        return named
    return next((r.model for r in requests if r.model not in _NOT_A_MODEL), "")


def read_reference(
    events: Sequence[Event],
    *,
    name: str,
    metadata: Mapping[str, JSONValue],
    override: str | None,
    default_model: str,
    counter: TokenCounter,
) -> Reference:
    """Read the reference of one transcript (see the module docstring); ``name`` appears in errors."""
    requests, usage, window_at = _requests_and_usage(events)
    if override:
        profile = resolve_model(override, "--model")
        profiles = tuple(profile for _ in requests)
        source = "--model"
    else:
        session = _session_model(metadata, requests)
        source = "transcript" if session else "default"
        profile = resolve_model(session or default_model, name)
        cache: dict[str, ModelProfile] = {}
        chosen = []
        for n, r in enumerate(requests):
            model = r.model if r.model not in _NOT_A_MODEL else (usage[n].model if n in usage else "")
            if model in _NOT_A_MODEL:
                chosen.append(profile)
                continue
            if model not in cache:
                cache[model] = resolve_model(model, f"{name}: request {n}")
            chosen.append(cache[model])
        profiles = tuple(chosen)
    calibration = Calibration(counter=counter.name, tokenizer=profile.tokenizer)
    if not usage:
        return Reference(
            profile=profile,
            request_profiles=profiles,
            calibration=calibration,
            model_source=source,
            own_window_event_at=window_at,
        )
    reasoning = resent_reasoning(requests, usage)
    visible = _visible_counts(events, profile, BlockMeter(counter), want=set(usage), reasoning=reasoning)
    if counter.name != profile.tokenizer:
        calibration = _calibrate(calibration, visible, usage, profiles)
    reference = Reference(
        profile=profile, request_profiles=profiles, usage=usage, calibration=calibration, model_source=source
    )
    hidden = _hidden_prefix(events, profile, reference.counter(counter), usage, calibration.label, reasoning)
    return Reference(
        profile=profile,
        request_profiles=profiles,
        usage=usage,
        calibration=calibration,
        hidden_prefix=hidden,
        model_source=source,
        cache_ttl=_cache_ttl(usage.values()),
        own_window_event_at=window_at,
        reasoning=reasoning,
        resets={} if override else cache_resets(usage, profiles, before=window_at),  # another model, another cache
    )


RESET_SHARE = 0.9
"""A billed read below this share of what the previous request had just cached is a cache reset."""


def cache_resets(
    usage: Mapping[int, UsageReport], profiles: Sequence[ModelProfile], *, before: int = NO_WINDOW_EVENT
) -> dict[int, int]:
    """Requests whose billed read fell below what the model's previous request had cached, and that read.

    A provider-side miss no transcript predicts, taken from the usage as the warm start is. Not for
    Gemini (a measured hit share models it) nor from ``before`` on (the agent's own compaction).
    """
    resets: dict[int, int] = {}
    last: dict[str, UsageReport] = {}  # the previous call of the same model (a side call uses another cache)
    for i, u in sorted(usage.items()):
        profile = profiles[i] if i < len(profiles) else None
        if profile is None:
            continue
        previous, last[profile.name] = last.get(profile.name), u
        if i >= before or previous is None or IMPLICIT_HIT_SHARE.get(profile.cache_style, 1.0) < 1.0:
            continue
        cached = previous.cache_read_tokens + previous.cache_write_tokens
        if cached >= max(profile.min_cacheable_tokens, 1) and u.cache_read_tokens < RESET_SHARE * cached:
            resets[i] = u.cache_read_tokens
    return resets


def _hidden_prefix(
    events: Sequence[Event],
    profile: ModelProfile,
    counter: TokenCounter,
    usage: Mapping[int, UsageReport],
    counted_with: str,
    reasoning: Mapping[str, int],
) -> HiddenPrefix:
    first = min(usage)
    scaled = _visible_counts(events, profile, BlockMeter(counter), want={first}, reasoning=reasoning)[first]
    billed, read = usage[first].input_tokens, usage[first].cache_read_tokens
    hidden = max(billed - scaled, 0)
    warm = min(read, hidden)
    if not hidden:
        method = (
            f"request {first}'s billed input ({billed:,}) is not above its visible request ({scaled:,}): none assumed"
        )
        return HiddenPrefix(method=method)
    method = f"request {first}'s billed input ({billed:,}) minus its visible request ({scaled:,}, {counted_with})"
    if warm:
        method += f"; its first {warm:,} cached before the session (request {first} read {read:,} from the cache)"
    return HiddenPrefix(tokens=hidden, warm_tokens=warm, method=method)


def _cache_ttl(reports: Iterable[UsageReport]) -> CacheTTL:
    """``1h`` when most tokens the transcript wrote to the cache had the 1-hour lifetime."""
    written = one_hour = 0
    for u in reports:
        written += u.cache_write_tokens
        one_hour += u.cache_write_1h_tokens
    return "1h" if written and 2 * one_hour > written else "5m"


def _visible_counts(
    events: Sequence[Event],
    profile: ModelProfile,
    meter: BlockMeter,
    *,
    want: set[int],
    reasoning: Mapping[str, int],
) -> dict[int, int]:
    """Tokens of the raw request before each wanted assistant message (what the transcript shows)."""
    history = History()
    turn = TurnReasoning(reasoning)
    counts: dict[int, int] = {}
    index = 0
    last = max(want, default=-1)
    for event in events:
        if event.is_window_event:
            continue
        if isinstance(event, AssistantMessage):
            if index in want:
                ctx = plain_context(profile, history.system, history.messages, meter.counter)
                body = render_openai_chat(ctx)
                blocks = turn.carry(ctx.messages, meter.blocks(body), align(ctx, body)[1])
                counts[index] = sum(b.tokens for b in blocks)
            if index >= last:
                break
            index += 1
        history.add(event)
        turn.observe(event)
    return counts


def _calibrate(
    base: Calibration,
    visible: Mapping[int, int],
    usage: Mapping[int, UsageReport],
    profiles: Sequence[ModelProfile],
) -> Calibration:
    ratios: list[float] = []
    local_sum = real_sum = 0
    for a, b in itertools.pairwise(sorted(usage)):
        if profiles[a].name != profiles[b].name:
            continue  # another model, maybe another tokenizer
        local = visible[b] - visible[a]
        real = usage[b].input_tokens - usage[a].input_tokens
        if local < MIN_PAIR_TOKENS or real <= 0:
            continue
        ratios.append(real / local)
        local_sum += local
        real_sum += real
    if not ratios:
        return base
    return Calibration(
        counter=base.counter,
        tokenizer=base.tokenizer,
        factor=real_sum / local_sum,
        low=min(ratios),
        high=max(ratios),
        pairs=len(ratios),
    )
