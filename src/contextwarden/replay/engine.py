"""The replay engine: every request a strategy would have sent over a real transcript, measured.

For one transcript and one strategy, the transcript's events are appended one by one to a fresh
in-memory session. Right before each assistant message (one model request each) the strategy
builds its request; the engine renders it as OpenAI Chat, measures it block by block with the
transcript's counter, prices it with the cache model (:mod:`.costmodel`) for the model that answered
it, checks the retention probes (:mod:`.probes`) and, when asked, dumps it. Then the transcript's own
assistant message and the events after it are appended as they happened, so every strategy sees the
same outputs. Only the request being measured is held; the figures kept per request are a few numbers.

What the transcript records about its real requests (models, usage, the tokenizer calibration, the
hidden prefix every request carries) is read once per transcript by :mod:`.reference`; the raw
strategy's figures are compared with the billed usage by :mod:`.billcheck`.

Time: requests are sent at the transcript's own timestamps when the importer found them on every
response, else ``interval_seconds`` apart; each file's result says which. Window events recorded in
the transcript itself (a compaction the original agent made) are not replayed: each strategy makes its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from .._files import safe_file_name
from ..context import SECTIONS
from ..errors import UsageError
from ..log.events import AssistantMessage
from ..log.store import MemoryStore
from ..models import ModelProfile, get_profile
from ..tokens import HeuristicCounter, TokenCounter
from ..wire.openai_chat import render_openai_chat
from ._measure import Clock, align, block_breakpoints, output_tokens
from .billcheck import ttl_label, usage_check
from .catalog import parse_strategy
from .costmodel import BlockMeter, CacheSimulator, price_call
from .inputs import ReplayInput
from .optimum import offline_optimum
from .peers import PeerStrategy, PeerUnavailable
from .probes import ProbeTracker
from .reasoning import TurnReasoning
from .reference import Reference, read_reference
from .results import FileResult, ReplayResults, RequestRecord, StrategyResult
from .settings import ReplaySettings
from .strategies import Built, RunEnv, Strategy

DEFAULT_MODEL = "claude-sonnet-4-5"
"""The profile a transcript that names no model is priced and budgeted as (the report says so)."""
MAX_LISTED_MISSES = 200
"""``next_action_evidence`` misses listed per transcript and strategy (all are counted)."""
HIDDEN_SECTION = "hidden_prefix"
"""The section name of the estimated hidden prefix (system prompt, tool schemas the transcript lacks)."""

Progress = Callable[[int], None]
"""Called with the number of requests just measured."""


def default_counter() -> TokenCounter:
    """The exact o200k counter when installed, else the heuristic."""
    try:
        from ..tokens import ExactCounter

        return ExactCounter("o200k_base")
    except ImportError:
        return HeuristicCounter()


# --------------------------------------------------------------------------- one transcript


@dataclass
class _Measured:
    records: list[RequestRecord] = field(default_factory=list)
    misses: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)
    summarizer_tokens: int = 0
    notes: list[str] = field(default_factory=list)
    evidence_misses: list[str] = field(default_factory=list)
    file_reads: int = 0
    rereads: int = 0


class _FileReplay:
    """One strategy over one transcript. Holds one rendered request at a time."""

    def __init__(
        self,
        inp: ReplayInput,
        strategy: Strategy,
        *,
        reference: Reference,
        meter: BlockMeter,
        settings: ReplaySettings,
        summarizer: ModelProfile | None,
        dump: IO[str] | None,
    ) -> None:
        self.inp = inp
        self.reference = reference
        self.profile = reference.profile
        self.meter = meter
        self.summarizer = summarizer
        self.dump = dump
        self.settings = settings
        # the transcript's events are never mutated here: keep them as objects, not a second copy as JSON
        self.store = MemoryStore(keep_objects=True)
        self.sid = self.store.create_session("replay").id
        self.run = strategy.start(
            RunEnv(store=self.store, session_id=self.sid, profile=self.profile, counter=meter.counter)
        )
        self.tracker = ProbeTracker()
        # A provider caches per model: a session that switches models starts that model's cache cold.
        self.sims: dict[str, CacheSimulator] = {}
        self.clock = clock_of(inp, settings)
        self.hidden = reference.hidden_prefix.blocks()
        self.reasoning = TurnReasoning(reference.reasoning)
        self.previous: list[str] = []
        self.out = _Measured()

    def play(self, progress: Progress | None) -> _Measured:
        for event in self.inp.events:
            if event.is_window_event:
                continue
            if isinstance(event, AssistantMessage):
                self._request(event, self.run.build())
                if progress is not None:
                    progress(1)
            last = self.store.get_session(self.sid).last_seq
            stored = self.store.append(self.sid, [event], expected_last_seq=last)[0]
            self.run.observe(stored)
            self.tracker.add(stored)
            self.reasoning.observe(event)
        return self.out

    def _sim(self, profile: ModelProfile) -> CacheSimulator:
        sim = self.sims.get(profile.name)
        if sim is None:
            sim = self.reference.simulator(profile, self.settings.cache_ttl, at=self.clock(0))
            self.sims[profile.name] = sim
        return sim

    def _request(self, event: AssistantMessage, built: Built) -> None:
        ctx = built.context
        body = render_openai_chat(ctx)
        if self.dump is not None:
            self.dump.write(json.dumps(body, ensure_ascii=True) + "\n")
        sections_of, landed = align(ctx, body)
        blocks = self.reasoning.carry(ctx.messages, self.meter.blocks(body), landed)
        breakpoints = block_breakpoints(ctx, landed)
        if self.hidden:
            blocks = [*self.hidden, *blocks]
            sections_of = [*(HIDDEN_SECTION for _ in self.hidden), *sections_of]
            # The hidden prefix is the agent's system prompt and tools, which agents mark for caching.
            breakpoints = [len(self.hidden) - 1, *(b + len(self.hidden) for b in breakpoints)]
        index = len(self.out.records)
        out_tokens = self.reference.output_tokens(index, output_tokens(event, self.meter.counter))
        profile = self.reference.profile_of(index)
        if index in self.reference.resets:  # the provider lost its cache here, whatever was sent
            self._sim(profile).forget(blocks, keep_tokens=self.reference.resets[index])
        cost = self._sim(profile).observe(
            blocks, at=self.clock(index), output_tokens=out_tokens, breakpoints=breakpoints
        )
        keys = [b.key for b in blocks]
        prefix_break = bool(self.previous) and keys[: len(self.previous)] != self.previous
        self.previous = keys
        sections: dict[str, int] = {k: 0 for k in SECTIONS}
        for section, block in zip(sections_of, blocks, strict=True):
            sections[section] = sections.get(section, 0) + block.tokens
        probes = self.tracker.check(body, upcoming=event)
        for kind, what in probes.missing.items():
            self.out.misses[kind] = self.out.misses.get(kind, 0) + 1
            self.out.examples.setdefault(kind, f"request {index}: {what}")
        if len(self.out.evidence_misses) < MAX_LISTED_MISSES:
            self.out.evidence_misses.extend(m.describe(index) for m in probes.evidence_misses)
        self.out.file_reads += probes.reads
        self.out.rereads += probes.rereads
        summarized = built.summarizer_input_tokens + built.summarizer_output_tokens
        self.out.summarizer_tokens += summarized
        extra = (
            price_call(
                self.summarizer or profile,
                input_tokens=built.summarizer_input_tokens,
                output_tokens=built.summarizer_output_tokens,
            )
            if summarized
            else 0.0
        )
        window = bool(built.window_event_kinds) if built.reports_window_events else prefix_break
        kinds = built.window_event_kinds if built.reports_window_events else (("edit",) if prefix_break else ())
        if built.note:
            self.out.notes.append(f"request {index}: {built.note}")
        limit = self.profile.input_window
        usage = self.reference.usage.get(index)
        self.out.records.append(
            RequestRecord(
                index=index,
                at=self.clock(index),
                input_tokens=cost.input_tokens,
                cache_read_tokens=cost.cache_read_tokens,
                cache_write_tokens=cost.cache_write_tokens,
                output_tokens=out_tokens,
                cost_usd=cost.cost_usd + extra,
                messages=len(body.get("messages", ())),
                sections=sections,
                window_event=window,
                window_event_kinds=kinds,
                prefix_break=prefix_break,
                shared_prefix_tokens=cost.shared_prefix_tokens,
                summarizer_tokens=summarized,
                overflow=limit is not None and cost.input_tokens > limit,
                probes=dict(probes.results),
                model=profile.name,
                usage_input_tokens=usage.input_tokens if usage else None,
                usage_cache_read_tokens=usage.cache_read_tokens if usage else None,
                usage_cache_write_tokens=usage.cache_write_tokens if usage else None,
            )
        )


def clock_of(inp: ReplayInput, settings: ReplaySettings) -> Clock:
    """The send times of ``inp``'s requests (its timestamps when the importer found real ones)."""
    stamped = inp.metadata.get("timestamps")
    return Clock(inp.events, settings.interval_seconds, stamped=stamped if isinstance(stamped, str) else None)


def replay_file(
    inp: ReplayInput,
    strategy: Strategy,
    *,
    reference: Reference,
    meter: BlockMeter,
    settings: ReplaySettings,
    dump: IO[str] | None = None,
    progress: Progress | None = None,
) -> FileResult:
    """Replay one strategy over one transcript (``reference`` from :func:`reference_of`)."""
    summarizer = get_profile(settings.summarizer_model) if settings.summarizer_model else None
    replayer = _FileReplay(
        inp, strategy, reference=reference, meter=meter, settings=settings, summarizer=summarizer, dump=dump
    )
    measured = replayer.play(progress)
    records = measured.records
    usage = usage_check(inp, records, reference) if strategy.name == "raw" else None
    note = "; ".join(measured.notes[:3]) + (f" (+{len(measured.notes) - 3} more)" if len(measured.notes) > 3 else "")
    return FileResult(
        file=inp.source,
        name=inp.name,
        requests=tuple(records),
        summarizer_tokens=measured.summarizer_tokens,
        usage=usage,
        probe_misses=dict(measured.misses),
        miss_examples=dict(measured.examples),
        evidence_misses=tuple(measured.evidence_misses[:MAX_LISTED_MISSES]),
        file_reads=measured.file_reads,
        rereads=measured.rereads,
        note=note,
        model=reference.profile.name,
        model_source=reference.model_source,
        counter=reference.calibration.to_dict(),
        hidden_prefix_tokens=reference.hidden_prefix.tokens,
        hidden_prefix_method=reference.hidden_prefix.method,
        clock=replayer.clock.label,
        cache_ttl=ttl_label(settings, reference),
    )


def reference_of(inp: ReplayInput, settings: ReplaySettings, counter: TokenCounter) -> Reference:
    """The reference of one transcript: its models, usage, calibration and hidden prefix."""
    return read_reference(
        inp.events,
        name=inp.source,
        metadata=inp.metadata,
        override=settings.model,
        default_model=DEFAULT_MODEL,
        counter=counter,
    )


def _dump_file(dump_dir: str | Path | None, strategy: str, name: str) -> IO[str] | None:
    if dump_dir is None:
        return None
    # both names may come from transcript data (a session id, a file name): neither leaves the folder
    folder = Path(dump_dir) / safe_file_name(strategy)
    folder.mkdir(parents=True, exist_ok=True)
    return (folder / f"{safe_file_name(name)}.jsonl").open("w", encoding="utf-8")


def replay(
    inputs: Sequence[ReplayInput],
    strategies: Sequence[str | Strategy],
    *,
    settings: ReplaySettings | None = None,
    counter: TokenCounter | None = None,
    dump_dir: str | Path | None = None,
    progress: Progress | None = None,
) -> ReplayResults:
    """Replay every strategy over every transcript (see the module docstring)."""
    settings = settings or ReplaySettings()
    counter = counter or default_counter()
    parsed = [parse_strategy(s) if isinstance(s, str) else s for s in strategies]
    notes: list[str] = []
    references = [reference_of(inp, settings, counter) for inp in inputs]
    # One meter per transcript: its counter is calibrated to that transcript's provider.
    meters = [BlockMeter(ref.counter(counter)) for ref in references]
    for inp, ref in zip(inputs, references, strict=True):
        if ref.model_source == "default":
            notes.append(f"{inp.name} names no model: priced and budgeted as {ref.profile.name} (pass --model)")
        for stand_in in sorted(
            {p.name: p for p in ref.request_profiles if p.family_match}.values(), key=lambda p: p.name
        ):
            notes.append(
                f"{inp.name}: model {stand_in.name!r} is not in the model table: "
                f"priced and budgeted as {stand_in.family_match!r}, its family (pass --model to choose)"
            )
    optimum: dict[str, float | None] = {}
    if settings.optimum:
        for inp, ref, meter in zip(inputs, references, meters, strict=True):
            optimum[inp.source] = offline_optimum(
                inp.events,
                profile=ref.profile,
                meter=meter,
                settings=settings,
                reference=ref,
                clock=clock_of(inp, settings),
            ).cost_usd
    results: list[StrategyResult] = []
    for strategy in parsed:
        skipped = strategy.availability() if isinstance(strategy, PeerStrategy) else ""
        if skipped:
            notes.append(f"{strategy.name} skipped: {skipped}")
            results.append(StrategyResult(name=strategy.name, skipped=skipped))
            if progress is not None:
                progress(sum(i.requests for i in inputs))
            continue
        per_file: list[FileResult] = []
        for inp, ref, meter in zip(inputs, references, meters, strict=True):
            dump = _dump_file(dump_dir, strategy.name, inp.name)
            try:
                result = replay_file(
                    inp, strategy, reference=ref, meter=meter, settings=settings, dump=dump, progress=progress
                )
            except PeerUnavailable as exc:  # pragma: no cover - availability() is checked first
                raise UsageError(f"{strategy.name}: {exc}") from None
            finally:
                if dump is not None:
                    dump.close()
            per_file.append(replace(result, optimum_cost_usd=optimum.get(inp.source)))
        results.append(StrategyResult(name=strategy.name, per_file=tuple(per_file)))
    models = sorted({ref.profile.name for ref in references}) or [settings.model or DEFAULT_MODEL]
    styles = sorted({ref.profile.cache_style for ref in references}) or ["none"]
    labels = sorted({ref.calibration.label for ref in references})
    return ReplayResults(
        files=tuple(i.source for i in inputs),
        strategies=tuple(results),
        counter=counter.name,
        counter_exact=bool(getattr(counter, "exact", False)),
        counter_label="; ".join(labels) if len(labels) == 1 else "per transcript (see each file's counter)",
        model=", ".join(models),
        cache_style=", ".join(styles),
        settings={
            "model": settings.model,
            "interval_seconds": settings.interval_seconds,
            "cache_ttl": settings.cache_ttl or "each transcript's own",
            "summarizer_model": settings.summarizer_model or "each request's model",
        },
        notes=tuple(notes),
    )
