"""What the model sees on one turn of a session, and why: the data behind ``contextwarden inspect``.

For the chosen request (the one before the N-th model call, or by default the one the manager would
build now) an :class:`Inspection` gives the composition by section and by tier (tokens, share of the
window), the prefix it shares with the request before (what a provider cache can serve), every item
with its tier and lifecycle, and the decision log: what was truncated, masked, superseded, made
stale or compacted, and why.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..assemble.manager import ContextPolicy
from ..context import SECTIONS, Decision, ModelContext
from ..errors import UsageError
from ..log.events import Compaction, ToolCall
from ..log.store import SessionStore
from ..models import get_profile
from ..plan.compaction.entry import compaction_decision, recorded_only
from ..plan.compaction.statements import compaction_reason
from ..tokens import TokenCounter, best_counter
from ..window.items import ContextItem, Tier
from ._contexts import ContextRequestOptions, request_from_context
from ._diff import CAUSES, find_break, shared_prefix_tokens
from ._proxied import is_proxied, is_request
from .metrics import cacheable
from .sent import rebuild_as_sent
from .session import ReplayedTurn, replay_session


@dataclass(frozen=True, kw_only=True)
class ItemView:
    """One message of the request as ``inspect`` lists it."""

    index: int
    """Position in the request's messages."""
    role: str
    """Who speaks."""
    section: str
    """Its section."""
    tier: str
    """Its priority tier (``-`` for messages the pairing normalizer added)."""
    state: str
    """Its lifecycle (fresh, masked, superseded, stale...)."""
    tokens: int
    """Its tokens."""
    source: str
    """The event it came from."""
    preview: str
    """The start of its text."""


@dataclass(frozen=True, kw_only=True)
class Inspection:
    """The composition of one request and the reasons behind it."""

    session_id: str
    """The session."""
    turn: int
    """Which request (1-based; the last one is the request the manager would build now)."""
    turns: int
    """How many requests the session has (including the next one)."""
    context: ModelContext
    """The request itself."""
    window: int
    """The window used for percentages (the model's, else the usable budget)."""
    sections: dict[str, int]
    """Tokens per section."""
    tiers: dict[str, int]
    """Tokens per tier (system prompt and tool schemas count as tier 0)."""
    shared_prefix: int
    """Tokens at the front shared with the previous request."""
    cacheable_prefix: int
    """Of those, what the model's provider would serve from its cache."""
    prefix_break: str
    """Where and why the prefix broke (empty when this request extends the previous one)."""
    window_events: tuple[str, ...]
    """Window events recorded since the previous request."""
    items: tuple[ItemView, ...]
    """Every message."""
    standing: tuple[Decision, ...] = ()
    """The reductions in effect in this request, made at this build or an earlier one (the
    request's own ``context.decisions`` are only this build's)."""

    def percent(self, tokens: int) -> float:
        """``tokens`` as a percentage of the window."""
        return 100.0 * tokens / self.window if self.window else 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        ctx = self.context
        return {
            "session": self.session_id,
            "turn": self.turn,
            "turns": self.turns,
            "model": ctx.model,
            "window": self.window,
            "budget": ctx.budget,
            "total_tokens": ctx.total_tokens,
            "counter": ctx.counter,
            "sections": {
                k: {"tokens": v, "percent_of_window": round(self.percent(v), 2)} for k, v in self.sections.items()
            },
            "tiers": {k: {"tokens": v, "percent_of_window": round(self.percent(v), 2)} for k, v in self.tiers.items()},
            "cached_prefix": {
                "shared_tokens": self.shared_prefix,
                "cacheable_tokens": self.cacheable_prefix,
                "break": self.prefix_break or None,
            },
            "window_events": list(self.window_events),
            "decisions": [_decision(d) for d in self.standing],
            "decisions_this_request": [_decision(d) for d in ctx.decisions if d.action != "plan"],
            "items": [vars(i).copy() for i in self.items],
        }


def _decision(d: Decision) -> dict[str, Any]:
    return {"action": d.action, "target": d.target, "reason": d.reason, "tokens_saved": d.tokens_saved}


def _standing(made: list[Decision], ctx: ModelContext) -> tuple[Decision, ...]:
    """Of every decision the replay's builds made, those about something this request still shows.

    Pairing repairs are always listed: a dropped orphan result or an aborted call is about what the
    request leaves out, and it holds for every request that shows that part of the history.
    """
    shown = {source for m in ctx.messages for source in m.source_ids}
    kept = (d for d in made if d.action != "plan" and (d.target in shown or d.action in ("compact", "pairing")))
    return tuple(dict.fromkeys(kept))


def _recorded_summaries(store: SessionStore, session_id: str) -> list[tuple[int, Decision]]:
    """(seq, decision) of the session's own compactions a replay cannot re-derive.

    The replay re-derives only the planner's compactions, with the structured summarizer. A compaction
    something else decided (a hook, an overflow, a caller) is only in the log, and so is what the
    agent's summarizer did (rejected, replaced, corrected by verification): both are listed as recorded.
    """
    out: list[tuple[int, Decision]] = []
    for event in store.iter_events(session_id):
        if not isinstance(event, Compaction):
            continue
        decision = compaction_decision(event)
        if not recorded_only(event):
            decision = replace(decision, reason=compaction_reason(event, ""))  # the replay's own says why
        if decision.reason:
            out.append((event.seq, replace(decision, reason=f"as recorded: {decision.reason}")))
    return out


def _tier_name(tier: Tier) -> str:
    return f"{int(tier)} {tier.name.lower()}"


def _views(ctx: ModelContext, items: tuple[ContextItem, ...]) -> tuple[ItemView, ...]:
    by_source = {item.id: item for item in items}
    views = []
    for i, message in enumerate(ctx.messages):
        source = message.source_ids[0] if message.source_ids else ""
        item = by_source.get(source) or by_source.get(f"{message.section}:{source}")
        views.append(
            ItemView(
                index=i,
                role=message.role,
                section=message.section,
                tier=_tier_name(item.tier) if item is not None else "-",
                state=item.state.value if item is not None else "added",
                tokens=message.tokens,
                source=source,
                preview=_preview(message.text, message.tool_calls),
            )
        )
    return tuple(views)


def _preview(text: str, calls: tuple[ToolCall, ...]) -> str:
    shown = " ".join(text.split())[:80]
    if calls:
        names = ", ".join(f"{c.name}({' '.join(str(v) for v in c.arguments.values())[:40]})" for c in calls)
        shown = f"{shown} -> {names}" if shown else f"-> {names}"
    return shown


def _tiers(ctx: ModelContext, views: tuple[ItemView, ...]) -> dict[str, int]:
    tiers = {_tier_name(t): 0 for t in Tier}
    tiers[_tier_name(Tier.SYSTEM)] += ctx.sections.get("system", 0) + ctx.sections.get("tools", 0)
    for view in views:
        key = view.tier if view.tier in tiers else _tier_name(Tier.HISTORY)
        tiers[key] += view.tokens
    return tiers


def inspect_session(
    store: SessionStore,
    session_id: str,
    *,
    turn: int | None = None,
    model: str | None = None,
    policy: ContextPolicy | None = None,
    counter: TokenCounter | None = None,
) -> Inspection:
    """Inspect request ``turn`` of a session (default: the one the manager would build now).

    Raises :class:`UsageError` for a turn the session does not have, or one that cannot be built.
    """
    counter = counter or best_counter()
    proxied = is_proxied(store.get_session(session_id).metadata)
    count = 1 + sum(1 for e in store.iter_events(session_id) if is_request(e, proxied=proxied))
    if turn is not None and not 1 <= turn <= count:
        raise UsageError(
            f"session {session_id!r} has {count} request(s) (the last is the next one); there is no turn {turn}"
        )
    previous: ReplayedTurn | None = None
    chosen: ReplayedTurn | None = None
    made: list[Decision] = []
    recorded = _recorded_summaries(store, session_id)
    for replayed in replay_session(
        store, session_id, model=model, policy=policy, counter=counter, items_at=turn or count, final=True
    ):
        previous, chosen = chosen, replayed
        made.extend(replayed.context.decisions if replayed.context is not None else ())
        while recorded and recorded[0][0] < replayed.seq:
            made.append(recorded.pop(0)[1])
        if replayed.turn == turn:
            break
    assert chosen is not None
    if chosen.context is None:
        raise UsageError(f"turn {chosen.turn} of session {session_id!r} cannot be built: {chosen.error}")
    ctx, items = chosen.context, chosen.items
    before_ctx = previous.context if previous is not None else None
    if model is None and policy is None:  # what was sent, not what a fresh manager would decide
        sent = rebuild_as_sent(store, session_id, before_seq=chosen.seq, counter=counter)
        if sent is not None:
            ctx, items = sent
        if previous is not None and before_ctx is not None:
            earlier = rebuild_as_sent(store, session_id, before_seq=previous.seq, counter=counter)
            before_ctx = earlier[0] if earlier is not None else before_ctx
    shared, broke = 0, ""
    if previous is not None and before_ctx is not None:
        before = request_from_context(before_ctx, number=previous.turn, counter=counter)
        after = request_from_context(
            ctx, number=chosen.turn, counter=counter, options=ContextRequestOptions(window_events=chosen.window_events)
        )
        shared = shared_prefix_tokens(before, after)
        brk = find_break(before, after)
        if brk is not None:
            why = f" after {', '.join(brk.window_events)}" if brk.window_events else ""
            broke = f"{brk.item}: {CAUSES[brk.cause]} ({brk.describe()}){why}"
    views = _views(ctx, items)
    sections: dict[str, int] = {name: ctx.sections.get(name, 0) for name in SECTIONS}
    return Inspection(
        session_id=session_id,
        turn=chosen.turn,
        turns=count,
        context=ctx,
        window=ctx.context_window or ctx.budget,
        sections=sections,
        tiers=_tiers(ctx, views),
        shared_prefix=shared,
        cacheable_prefix=cacheable(shared, chosen.profile or get_profile(ctx.model)),
        prefix_break=broke,
        window_events=chosen.window_events,
        items=views,
        standing=_standing(made, ctx),
    )
