"""The context manager: from a session log to a model-ready, budget-true, cache-stable request.

``ContextManager.build`` runs the pipeline of DESIGN.md on every model call:

1. bring the window's projection up to date (only events new since the last call are read);
2. ask the planner for a batch of reductions; record it as a window event;
3. if still over the trigger, compact (when a compactor is configured); record it;
4. order, pairing-normalize and measure the request; refuse to return one over the budget.

The manager only ever appends its own window events; it never edits or deletes events.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from .budget import BudgetPolicy
from .context import SECTIONS, Decision, Message, ModelContext, ToolDefinition
from .errors import BudgetExceededError, UsageError
from .events import Compaction, ContextEditBatch, Event, ToolCall, ToolResult, UsageReport
from .models import ModelProfile, get_profile
from .planner import Plan, PlannerSettings, plan
from .policies.presets import CODING_TOOL_POLICIES, ToolPolicy
from .projection import Projection, ProjectionConfig
from .retrieval import read_range, recall
from .store._protocol import SessionStore
from .tokens import TokenCounter, best_counter
from .tools import READ_RANGE, RECALL, ToolSpec
from .window import compaction_blocks, latest_compaction

if TYPE_CHECKING:
    from .subagents import SubtaskContext

ToolLike = ToolDefinition | ToolSpec
"""A tool as callers pass it: a neutral definition or a registry spec."""


def _int(value: object, default: int) -> int:
    try:
        return int(value)  # type: ignore[call-overload, no-any-return]
    except (TypeError, ValueError):
        return default


@dataclass(frozen=True, kw_only=True)
class ContextPolicy:
    """Everything that decides what the model sees. Vary it with ``dataclasses.replace``."""

    name: str = "contextwarden"
    """A name for reports."""
    tool_policies: tuple[ToolPolicy, ...] = CODING_TOOL_POLICIES
    """Per-tool normalize/truncate/retain rules."""
    max_item_tokens: int = 10_000
    """Hard cap of every item."""
    planner: PlannerSettings = field(default_factory=PlannerSettings)
    """When and how much to reduce."""
    budget: BudgetPolicy = field(default_factory=BudgetPolicy)
    """Reserve, safety margin, trigger."""
    compact: bool = True
    """Compact when reductions are not enough (needs a compactor on the manager)."""
    retrieval_tools: bool = True
    """Expose ``read_range`` and ``recall`` so evicted content can be read back (served by
    :meth:`ContextManager.retrieve`)."""
    retrieval_max_tokens: int = 4_000
    """Cap of one retrieval answer."""


class Compactor(Protocol):
    """Makes a compaction event for a window that no longer fits (see ``contextwarden.compaction``)."""

    def compact_window(
        self, session_id: str, projection: Projection, *, profile: ModelProfile, reason: str
    ) -> Compaction | None:
        """Return the compaction to append, or None when nothing is old enough to summarize."""
        ...


@dataclass
class _Session:
    projection: Projection
    retrieval_shown: bool | None = None
    """Whether the last request built offered the retrieval tools (None: none built in this process)."""


class ContextManager:
    """Builds each model request of a session as a projection of its log."""

    def __init__(
        self,
        store: SessionStore,
        *,
        counter: TokenCounter | None = None,
        policy: ContextPolicy | None = None,
        compactor: Compactor | Literal["structured"] | None = "structured",
    ) -> None:
        """Build requests from ``store``.

        ``compactor`` compacts a window that reductions cannot bring under the trigger; the
        default is contextwarden's structured compactor, which needs no model. ``None`` turns
        compaction off (an over-budget window then raises :class:`BudgetExceededError`).
        """
        self.store = store
        self.counter = counter or best_counter()
        self.policy = policy or ContextPolicy()
        if compactor == "structured":
            from .compaction.compactor import CompactionSettings, WindowCompactor  # builds on this module

            compactor = WindowCompactor(
                store, counter=self.counter, settings=CompactionSettings(budget=self.policy.budget)
            )
        self.compactor: Compactor | None = compactor
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ window

    def projection(self, session_id: str, *, policy: ContextPolicy | None = None) -> Projection:
        """The up-to-date projection of the session's current window."""
        policy = policy or self.policy
        with self._lock:
            cached = self._sessions.get(session_id)
            if cached is None or cached.projection.config.tool_policies is not policy.tool_policies:
                cached = _Session(projection=self._load(session_id, policy))
                self._sessions[session_id] = cached
            else:
                self._catch_up(session_id, cached, policy)
            return cached.projection

    def _config(self, policy: ContextPolicy) -> ProjectionConfig:
        return ProjectionConfig(
            counter=self.counter, tool_policies=policy.tool_policies, max_item_tokens=policy.max_item_tokens
        )

    def _load(self, session_id: str, policy: ContextPolicy) -> Projection:
        events = self.store.read_window(session_id)
        return self._project(events, policy)

    def _project(self, events: Sequence[Event], policy: ContextPolicy) -> Projection:
        compaction = latest_compaction(events)
        projection = Projection(self._config(policy), compaction=compaction)
        if compaction is not None:
            projection.add_blocks(compaction_blocks(compaction, self.counter))
        for event in events:
            if isinstance(event, Compaction):
                projection.last_seq = max(projection.last_seq, event.seq)
                continue
            projection.add(event)
        return projection

    def _catch_up(self, session_id: str, cached: _Session, policy: ContextPolicy) -> None:
        new = self.store.read(session_id, since_seq=cached.projection.last_seq)
        if any(isinstance(e, Compaction) for e in new):
            cached.projection = self._load(session_id, policy)
            return
        for event in new:
            cached.projection.add(event)

    # ------------------------------------------------------------------ build

    def build(
        self,
        session_id: str,
        *,
        model: str | ModelProfile,
        tools: Sequence[ToolLike] = (),
        policy: ContextPolicy | None = None,
    ) -> ModelContext:
        """Build the request for the session's next model call (see the module docstring)."""
        policy = policy or self.policy
        profile = model if isinstance(model, ModelProfile) else get_profile(model)
        projection = self.projection(session_id, policy=policy)
        exposed = self.exposed_tools(tools, projection, policy=policy)
        fixed = self._fixed_tokens(projection.system, exposed)
        window_ids: list[str] = []
        budget = policy.budget.usable_input(profile, tool_schema_tokens=0)
        trigger = min(policy.budget.trigger_for(profile), budget)
        turns = projection.assistant_turns
        decision = plan(
            projection,
            total=projection.estimate(fixed).tokens,
            trigger=trigger,
            profile=profile,
            turns_so_far=turns,
            settings=policy.planner,
            evidence=projection.protected_ids(policy.planner.working_set_files),
            conversation_tokens=projection.total,
        )
        if decision.edits:
            window_ids.append(self._record_edits(session_id, projection, decision))
        if decision.needs_compaction and policy.compact and self.compactor is not None:
            compaction = self.compactor.compact_window(session_id, projection, profile=profile, reason=decision.reason)
            if compaction is not None:
                stored = self.store.append(session_id, [compaction], expected_last_seq=projection.last_seq)
                window_ids.append(stored[0].id)
                projection = self.projection(session_id, policy=policy)
        if window_ids:
            # The first window event that evicts something is where the retrieval tools appear.
            exposed = self.exposed_tools(tools, projection, policy=policy)
            fixed = self._fixed_tokens(projection.system, exposed)
        shown = any(t.name == READ_RANGE.name for t in exposed)
        cached = self._sessions.get(session_id)
        if cached is not None:
            if shown and cached.retrieval_shown is False and not window_ids:
                # Output truncated at ingestion made them needed: the tool list changes here, so record it.
                batch = ContextEditBatch(edits=(), reason="retrieval tools offered: output truncated at ingestion")
                stored_batch = self.store.append(session_id, [batch], expected_last_seq=projection.last_seq)
                projection.add(stored_batch[0])
                window_ids.append(stored_batch[0].id)
            cached.retrieval_shown = shown
        return self._assemble(projection, profile, exposed, fixed, budget, tuple(window_ids), decision, policy)

    def exposed_tools(
        self, tools: Sequence[ToolLike], projection: Projection, *, policy: ContextPolicy | None = None
    ) -> tuple[ToolDefinition, ...]:
        """The tools a request offers.

        The caller's, filtered by the last recorded tool-set change, then the retrieval tools when
        the policy enables them and something left the window (masked, superseded, compacted, or
        truncated at ingestion). Before that there is nothing to read back, and their schemas would
        ride on every request of a short session. They appear with the window event that first
        evicts, which rewrites the request anyway; a truncation at ingestion records an (empty)
        context-edit batch for the change, so the cached prefix only ever changes at window events.
        """
        policy = policy or self.policy
        return _exposed(tools, projection.exposed_tools, retrieval=policy.retrieval_tools and _evicted(projection))

    def _fixed_tokens(self, system: str, tools: Sequence[ToolDefinition]) -> int:
        return self.counter.count(system) + sum(self.counter.count(_tool_json(t)) for t in tools)

    def _record_edits(self, session_id: str, projection: Projection, decision: Plan) -> str:
        before = projection.total
        batch = ContextEditBatch(
            edits=decision.edits,
            reason=decision.reason,
            tokens_before=before,
            tokens_after=before - decision.saved_tokens,
        )
        stored = self.store.append(session_id, [batch], expected_last_seq=projection.last_seq)
        projection.add(stored[0])
        return stored[0].id

    def _assemble(
        self,
        projection: Projection,
        profile: ModelProfile,
        tools: tuple[ToolDefinition, ...],
        fixed: int,
        budget: int,
        window_ids: tuple[str, ...],
        decision: Plan,
        policy: ContextPolicy,
    ) -> ModelContext:
        messages, pairing, measured = projection.normalized()
        sections = {k: measured.get(k, 0) for k in SECTIONS}
        sections["system"] = self.counter.count(projection.system)
        sections["tools"] = fixed - sections["system"]
        total = sum(sections.values())
        decisions = (*projection.decisions, *pairing, Decision(action="plan", target="", reason=decision.reason))
        # The provider's last usage report is truer than our count (seed 000): anchor on it when fresh.
        estimate = projection.estimate(fixed)
        checked = total if estimate.anchored is None else estimate.tokens
        if checked > budget:
            anchored = "" if estimate.anchored is None else f" (estimated from the last usage report; counted {total})"
            raise BudgetExceededError(
                f"request for {profile.name} does not fit after every reduction{anchored}",
                budget=budget,
                total=checked,
                sections=sections,
            )
        return ModelContext(
            model=profile.name,
            system=projection.system,
            messages=messages,
            tools=tools,
            sections=sections,
            total_tokens=total,
            budget=budget,
            window=profile.context_window,
            counter=self.counter.name,
            cache_breakpoints=_breakpoints(messages, projection, fixed=fixed, profile=profile, policy=policy),
            decisions=decisions,
            window_event_ids=window_ids,
        )

    def project_for_subtask(
        self,
        session_id: str,
        task: str,
        *,
        select: Sequence[str] = (),
        model: str | ModelProfile | None = None,
        tools: Sequence[ToolLike] = (),
    ) -> SubtaskContext:
        """Open a child session for ``task`` with a scoped context (see :func:`subagents.project_for_subtask`)."""
        from .subagents import project_for_subtask  # subagents builds on this module

        return project_for_subtask(self, session_id, task, select=select, model=model, tools=tools)

    def retrieve(self, session_id: str, call: ToolCall, *, policy: ContextPolicy | None = None) -> ToolResult:
        """Serve a ``read_range`` or ``recall`` call from the full log; the caller appends the result.

        Eviction is not forgetting: masked, superseded and truncated outputs stay in the log, and
        this reads them back (bounded like any tool output). It reads the whole log, on demand only.
        """
        policy = policy or self.policy
        events = self.store.read(session_id)
        args = call.arguments
        if call.name == READ_RANGE.name:
            text = read_range(
                events,
                str(args.get("artifact_id", "")),
                _int(args.get("start_line"), 1),
                _int(args.get("end_line"), 1),
                max_tokens=policy.retrieval_max_tokens,
                counter=self.counter,
                policies=policy.tool_policies,
            )
        elif call.name == RECALL.name:
            text = recall(
                events,
                str(args.get("query", "")),
                counter=self.counter,
                max_tokens=policy.retrieval_max_tokens,
                policies=policy.tool_policies,
            )
        else:
            raise UsageError(f"{call.name!r} is not a retrieval tool; expected read_range or recall")
        return ToolResult(call_id=call.id, tool_name=call.name, output=text)

    def record_usage(self, session_id: str, usage: UsageReport) -> None:
        """Append a provider usage report (it anchors later size estimates)."""
        last = self.store.get_session(session_id).last_seq
        self.store.append(session_id, [usage], expected_last_seq=last)

    def forget(self, session_id: str) -> None:
        """Drop the cached projection (the next build reloads the window from the store)."""
        with self._lock:
            self._sessions.pop(session_id, None)


def _tool_json(tool: ToolDefinition) -> str:
    """The tool as the model receives it, for counting."""
    return json.dumps(
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _definition(tool: ToolLike) -> ToolDefinition:
    if isinstance(tool, ToolDefinition):
        return tool
    return ToolDefinition(name=tool.name, description=tool.description, parameters=dict(tool.parameters))


_EVICTING = frozenset({"mask", "supersede", "stale", "clear", "truncate"})


def _evicted(projection: Projection) -> bool:
    """Whether content left the window: a compaction, an edit other than dropping thinking, a truncated output.

    (The retrieval tools are for reading such content back; before any, they would be dead weight.)
    """
    return projection.compaction is not None or any(d.action in _EVICTING for d in projection.decisions)


def _exposed(
    tools: Sequence[ToolLike], exposed: tuple[str, ...] | None, *, retrieval: bool
) -> tuple[ToolDefinition, ...]:
    """The tools of this request, in a stable order.

    The caller's tools (filtered by the last recorded tool-set change) come first, then the
    retrieval tools when enabled and not already offered.
    """
    chosen = [_definition(t) for t in tools]
    if exposed is not None:
        by_name = {t.name: t for t in chosen}
        chosen = [by_name[n] for n in exposed if n in by_name]
    if retrieval:
        names = {t.name for t in chosen}
        chosen += [_definition(t) for t in (READ_RANGE, RECALL) if t.name not in names]
    return tuple(chosen)


def _breakpoints(
    messages: Sequence[Message], projection: Projection, *, fixed: int, profile: ModelProfile, policy: ContextPolicy
) -> tuple[int, ...]:
    """Stable boundaries of the request, as message indices.

    After system and tools; after a compacted window's opening; just before the frontier (the first
    item any pending or possible edit can change, so a batch re-writes only from there); at the end.
    Every stable one lies at or before the frontier, so its prefix holds until the next compaction.
    A stable boundary whose prefix (measured: system, tools and the items before it) is below the
    model's minimum cacheable length would cache nothing, so it is left out.
    """
    thinking = policy.planner.mask and policy.planner.drop_old_thinking
    frontier = projection.frontier(thinking=thinking)
    minimum = profile.min_cacheable_tokens if profile.cache_style != "none" else 0
    stable: list[tuple[int, int]] = [(-1, fixed)]  # (message index, prefix tokens)
    opening = 0  # a compacted window opens with its pinned block and summary
    while opening < len(messages) and messages[opening].section in ("pinned", "summary"):
        opening += 1
    if opening:
        stable.append((opening - 1, fixed + sum(m.tokens for m in messages[:opening])))
    if frontier is not None:
        found = _message_index(messages, projection.items[frontier].id, frontier)
        if found:
            stable.append((found - 1, fixed + projection.total - projection.tail_tokens(frontier)))
    points = {index for index, prefix in stable if prefix >= minimum and (frontier is None or index < len(messages))}
    if messages:
        points.add(len(messages) - 1)
    return tuple(sorted(points))


def _message_index(messages: Sequence[Message], item_id: str, guess: int) -> int | None:
    """Index of the message rendering ``item_id``, searched outwards from ``guess``.

    Pairing normalization drops orphans and adds aborted results, so the item's message sits a few
    places from its item position; the search is exact, and short in practice.
    """
    count = len(messages)
    start = min(max(guess, 0), count - 1) if count else 0
    for step in range(count + 1):
        for n in (start - step, start + step) if step else (start,):
            if 0 <= n < count and item_id in messages[n].source_ids:
                return n
    return None
