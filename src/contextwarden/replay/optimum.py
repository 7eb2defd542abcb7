"""The offline optimum: the cheapest schedule of reduction batches a transcript allowed, known in hindsight.

A *schedule* is a set of batch points (request indices). At a batch point every reduction available
then that keeps every retention probe is applied at once: superseded and stale tool results become
their placeholders, and every other tool result is masked except the ones the probes need (the
latest tool result and the latest failing test or unresolved error output). Between batch points
nothing earlier changes: new events are appended verbatim, so each request extends the previous one
and the cache keeps hitting. Items are projected as contextwarden projects them (tool output bounded
at ingestion), so the optimum and the ``contextwarden`` strategy start from the same items.

Dynamic programming over batch points finds the cheapest schedule. With ``F[b]`` the least cost of
requests ``0..b`` given a batch at ``b``::

    F[0] = cost(request 0)
    F[b] = min over a < b of  F[a] + tail(a, b) + first(a, b)
    optimum = min over a of  F[a] + tail(a, n)

where ``tail(a, b)`` prices requests ``a+1 .. b-1`` built with batch ``a``'s reductions, one after the
other in one cache, and ``first(a, b)`` prices request ``b`` with its own batch applied against the
cache those requests left. A request over the model's input window makes its schedule infeasible.
Starting each segment's cache at its batch ignores entries older than the batch; with automatic
caching that changes nothing (a request shares no more with older requests than with the previous
one), with explicit breakpoints it rarely does, and the schedule found is priced again in one cache
from the first request, so the reported cost is what that schedule really costs.

The reductions made at arrival are the optimum's too: an output the window already shows is sent as
a reference to its twin (:mod:`contextwarden.window.references`), as contextwarden sends it. A batch
masks a twin like any other result; a reference the probes need whose twin the batch in force masks
shows its output in full (from that batch on, or from its arrival if it came later), and one they no
longer need stays a reference. So nothing masked is ever shown again, and the probes' results stay
visible.

Compaction is not among the reductions: its cost depends on a summarizer's output, which a
hindsight bound cannot know, and the structured summary cannot be checked by the probes beyond
their anchors; the bound is therefore over supersession and masking, which the probes fully check.
Output tokens are included (they are the same for every schedule), so ratios compare like with like.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..context import Message, ModelContext
from ..log.events import AssistantMessage, Event, with_position
from ..models import ModelProfile
from ..pairing import normalize_pairing
from ..window.policies.presets import CODING_TOOL_POLICIES
from ..window.projection import Projection, ProjectionConfig
from ..wire.openai_chat import render_openai_chat
from ._measure import Clock, align, output_tokens
from .costmodel import Block, BlockMeter, CacheSimulator, CostSettings
from .probes import ProbeTracker
from .reasoning import TurnReasoning, holds_reasoning, with_reasoning
from .reference import Reference
from .settings import ReplaySettings

_INFEASIBLE = float("inf")
_MASK_REASON = "offline optimum"


@dataclass(frozen=True, kw_only=True)
class Optimum:
    """The cheapest schedule found for one transcript."""

    cost_usd: float
    """Its cache-adjusted cost (output included); ``inf`` when no schedule fits the window."""
    batch_points: tuple[int, ...]
    """Requests at which it applies a batch."""
    never_cost_usd: float
    """The cost of never reducing (items bounded at ingestion only), for reference."""
    requests: int
    """Requests in the transcript."""


@dataclass(frozen=True, kw_only=True)
class _Snapshot:
    """What the optimum needs of one request point."""

    system: str
    ids: tuple[str, ...]
    edited: Mapping[str, Message]
    out_tokens: int
    at: float
    reasoning: Mapping[str, int]
    twins: Mapping[str, str]
    """Each result shown as a reference -> its twin."""
    full: Mapping[str, Message]
    """Each reference's message with its output in full (shown when a batch masked the twin before it came)."""


class _Blocks:
    """Block of each (item, variant), learned from renders of the base and fully reduced requests."""

    def __init__(self, meter: BlockMeter, hidden: Sequence[Block] = ()) -> None:
        self.meter = meter
        self.by_variant: dict[tuple[str, str], Block] = {}
        self.prefix: dict[str, list[Block]] = {}
        self.hidden = list(hidden)

    def learn(self, profile: ModelProfile, system: str, messages: Sequence[Message]) -> None:
        normalized, _ = normalize_pairing(messages)
        ctx = ModelContext(model=profile.name, system=system, messages=normalized)
        body = render_openai_chat(ctx)
        blocks = self.meter.blocks(body)
        _, landed = align(ctx, body)
        self.prefix[system] = self.hidden + blocks[: landed[-1] + 1]
        for j, m in enumerate(normalized):
            k = landed[j]
            if m.source_ids and k >= 0 and k != landed[j - 1]:  # landed[-1] is the system block
                self.by_variant[(m.source_ids[0], m.text)] = blocks[k]

    def request(
        self, snap: _Snapshot, base: Mapping[str, Message], edits: Mapping[str, Message]
    ) -> tuple[list[Block], list[int]]:
        """The request's blocks and its cache breakpoints: system end, the frontier, the last block.

        The frontier is the block before the oldest tool result still verbatim: no later batch
        changes anything before it, so a breakpoint there survives the next batch.
        """
        out = list(self.prefix.get(snap.system, ()))
        points = [len(out) - 1]
        for item_id in snap.ids:
            message = edits.get(item_id) or base[item_id]
            twin = snap.twins.get(item_id)
            if twin is not None and twin in edits and item_id not in edits:
                message = snap.full[item_id]  # needed while the batch in force masks its twin
            block = self.by_variant.get((item_id, message.text))
            if block is None:
                continue
            if item_id in snap.reasoning and holds_reasoning(message):
                block = with_reasoning(block, snap.reasoning[item_id])
            if len(points) == 1 and message.role == "tool" and item_id not in edits:
                points.append(len(out) - 1)
            out.append(block)
        points.append(len(out) - 1)
        return out, points


def _snapshots(
    events: Sequence[Event],
    profile: ModelProfile,
    meter: BlockMeter,
    settings: ReplaySettings,
    reference: Reference | None,
    clock: Clock | None,
) -> tuple[list[_Snapshot], dict[str, Message], _Blocks]:
    config = ProjectionConfig(counter=meter.counter, tool_policies=CODING_TOOL_POLICIES)
    projection = Projection(config)
    plain = Projection(replace(config, references=False))  # every output in full, for a twin masked earlier
    tracker = ProbeTracker()
    clock = clock or Clock(events, settings.interval_seconds)
    base: dict[str, Message] = {}
    learned = _Blocks(meter, reference.hidden_prefix.blocks() if reference is not None else ())
    turn = TurnReasoning(reference.reasoning if reference is not None else {})
    snaps: list[_Snapshot] = []
    seq = 0
    for event in events:
        if event.is_window_event:
            continue
        if isinstance(event, AssistantMessage):
            protected = tracker.protected_ids()
            edited: dict[str, Message] = {}
            twins: dict[str, str] = {}
            for item in projection.items:
                base.setdefault(item.id, item.message)
                twin = projection.twins.twin_of(item.id)
                if twin is not None:
                    twins[item.id] = twin
                    if item.id not in protected:  # stays a reference, whatever its twin shows
                        edited[item.id] = item.message
                    continue
                candidate = projection.candidates.get(item.id)
                if candidate is None and item.message.role == "tool" and item.evictable and item.id not in protected:
                    candidate = projection.mask_edit(item.id, _MASK_REASON)
                if candidate is not None and candidate.action != "drop_thinking":
                    edited[item.id] = replace(item.message, text=candidate.replacement, parts=())
            full = {i: message for i in twins if (message := _message_of(plain, i)) is not None}
            snap = _Snapshot(
                system=projection.system,
                ids=tuple(i.id for i in projection.items),
                edited=edited,
                out_tokens=(
                    reference.output_tokens(len(snaps), output_tokens(event, meter.counter))
                    if reference is not None
                    else output_tokens(event, meter.counter)
                ),
                at=clock(len(snaps)),
                reasoning=dict(turn.live),
                twins=twins,
                full=full,
            )
            learned.learn(profile, snap.system, [base[i] for i in snap.ids])
            learned.learn(profile, snap.system, [edited.get(i) or base[i] for i in snap.ids])
            if full:
                learned.learn(profile, snap.system, [full.get(i) or base[i] for i in snap.ids])
            snaps.append(snap)
        seq += 1
        stored = with_position(event, session_id="optimum", seq=seq)
        projection.add(stored)
        plain.add(stored)
        tracker.add(stored)
        turn.observe(event)
    return snaps, base, learned


def _message_of(projection: Projection, item_id: str) -> Message | None:
    item = projection.item(item_id)
    return item.message if item is not None else None


def _priced(
    sim: CacheSimulator,
    learned: _Blocks,
    base: Mapping[str, Message],
    snap: _Snapshot,
    edits: Mapping[str, Message],
    *,
    window: int | None,
    commit: bool,
) -> float:
    blocks, points = learned.request(snap, base, edits)
    if window is not None and sum(b.tokens for b in blocks) > window:
        return _INFEASIBLE
    price = sim.observe if commit else sim.peek
    return price(blocks, at=snap.at, output_tokens=snap.out_tokens, breakpoints=points).cost_usd


def _new_cache(
    profile: ModelProfile, settings: ReplaySettings, reference: Reference | None, snaps: Sequence[_Snapshot]
) -> CacheSimulator:
    """A fresh cache, warm like the strategies' when the transcript began warm (see :mod:`.reference`)."""
    if reference is not None:
        return reference.simulator(profile, settings.cache_ttl, at=snaps[0].at if snaps else 0.0)
    return CacheSimulator(profile, CostSettings(ttl=settings.cache_ttl or "5m"))


def _sequential(
    snaps: Sequence[_Snapshot],
    base: Mapping[str, Message],
    learned: _Blocks,
    points: Sequence[int],
    *,
    profile: ModelProfile,
    settings: ReplaySettings,
    reference: Reference | None,
) -> float:
    sim = _new_cache(profile, settings, reference, snaps)
    batches = set(points)
    current: Mapping[str, Message] = {}
    total = 0.0
    for r, snap in enumerate(snaps):
        if r in batches and r > 0:
            current = snap.edited
        total += _priced(sim, learned, base, snap, current, window=profile.input_window, commit=True)
    return total


def schedule_cost(
    events: Sequence[Event],
    batch_points: Sequence[int],
    *,
    profile: ModelProfile,
    meter: BlockMeter,
    settings: ReplaySettings,
    reference: Reference | None = None,
    clock: Clock | None = None,
) -> float:
    """The cost of one given schedule, every request priced in one cache (to check the optimum)."""
    snaps, base, learned = _snapshots(events, profile, meter, settings, reference, clock)
    return _sequential(snaps, base, learned, batch_points, profile=profile, settings=settings, reference=reference)


def offline_optimum(
    events: Sequence[Event],
    *,
    profile: ModelProfile,
    meter: BlockMeter,
    settings: ReplaySettings,
    reference: Reference | None = None,
    clock: Clock | None = None,
) -> Optimum:
    """The cheapest batch schedule for ``events`` under ``profile``'s cache (see the module docstring).

    With ``reference``, every request carries the transcript's hidden prefix and is charged its
    reported output tokens, as the strategies are; ``clock`` gives the send times.
    """
    snaps, base, learned = _snapshots(events, profile, meter, settings, reference, clock)
    n = len(snaps)
    if n == 0:
        return Optimum(cost_usd=0.0, batch_points=(), never_cost_usd=0.0, requests=0)
    window = profile.input_window

    def priced(sim: CacheSimulator, snap: _Snapshot, edits: Mapping[str, Message], *, commit: bool) -> float:
        return _priced(sim, learned, base, snap, edits, window=window, commit=commit)

    tail: list[list[float]] = []  # tail[a][b - a - 1]: cumulative cost of requests a+1..b-1 under batch a
    first: list[list[float]] = []  # first[a][b - a - 1]: request b with its own batch after segment a
    start_cost = 0.0
    for a in range(n):
        sim = _new_cache(profile, settings, reference, snaps)
        batch = snaps[a].edited if a else {}
        cost_a = priced(sim, snaps[a], batch, commit=True)
        if a == 0:
            start_cost = cost_a
        running, tails, firsts = 0.0, [0.0], []
        for r in range(a + 1, n):
            firsts.append(priced(sim, snaps[r], snaps[r].edited, commit=False))
            running += priced(sim, snaps[r], batch, commit=True)
            tails.append(running)
        tail.append(tails)
        first.append(firsts)
    best = [_INFEASIBLE] * n
    parent = [-1] * n
    best[0] = start_cost
    for b in range(1, n):
        for a in range(b):
            value = best[a] + tail[a][b - a - 1] + first[a][b - a - 1]
            if value < best[b]:
                best[b], parent[b] = value, a
    finals = [best[a] + tail[a][n - a - 1] for a in range(n)]
    last = min(range(n), key=lambda a: finals[a])
    points: list[int] = []
    node = last
    while node > 0:
        points.append(node)
        node = parent[node]
    chosen = tuple(reversed(points))
    # The DP prices each segment in a cache that starts at the segment's batch; price the chosen
    # schedule in one cache from the start, so the figure is what that schedule really costs.
    exact = _sequential(snaps, base, learned, chosen, profile=profile, settings=settings, reference=reference)
    return Optimum(cost_usd=exact, batch_points=chosen, never_cost_usd=finals[0], requests=n)
